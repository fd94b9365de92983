/**
 * What each command prints on stdout with `--json`: one JSON document, or JSON lines (one object per line) where
 * the command streams. Commands whose default output is JSON already print the same with or without `--json`.
 * Declared once, here; README ("For auditors", "For finance") shows them. A command that fails prints nothing on
 * stdout (its message goes to stderr, its exit code says how it failed).
 */
import type { ClientCredentials } from '../../schemas/clients.ts';
import type { FeedDigestRecordedData } from '../integrity/events.ts';
import type { IntegrityReport } from '../integrity/integrity.ts';
import type { StatementHeader, StatementLine } from '../../projections/statements.ts';
import type { ReplayResult } from '../projection/replay.ts';
import type { ReadModelCheck } from '../projection/verify.ts';

/** `clients create`: the credentials, shown this once. */
export type ClientsCreateJson = ClientCredentials;

/** `projections status`. */
export interface ProjectionsStatusJson {
  /** The feed's last position (`<commit>-<prepare>`), null when the feed is empty. */
  head: string | null;
  projections: Array<{
    name: string;
    version: number;
    kind: 'projector' | 'reactor';
    /** A projector version is `building` until it catches up and is swapped in; a reactor is `active` from the start. */
    status: 'building' | 'active' | 'retired';
    /** The schema its tables live in (a replay moves it to `<schema>__<name>_v<version>_r<n>`); null for a reactor. */
    schema: string | null;
    checkpoint: string | null;
    /** Whether its checkpoint is at the feed's head: it has read every event there is. */
    caughtUp: boolean;
    /**
     * Events after its checkpoint up to the head (0 when caught up), counted up to 1,000,000; null on
     * EventStoreDB, whose log this command does not count.
     */
    eventsBehind: number | null;
    eventsHandled: number;
    lastError: string | null;
    updatedAt: string;
  }>;
}

/** `verify integrity`: the report (`ok` false: exit 3 and `problems` name each broken event). */
export type VerifyIntegrityJson = IntegrityReport;

/** `verify read-models`: one check per projector (`different` or `unsettled`: exit 3). */
export type VerifyReadModelsJson = ReadModelCheck[];

/** `integrity seal`: the digest recorded, or null when nothing was appended since the latest one. */
export type IntegritySealJson = FeedDigestRecordedData | null;

/** `replay`. */
export interface ReplayJson {
  replayed: ReplayResult[];
  /** Projectors left out when none were named: their replay would act again (see src/projection/replay.ts). */
  notReplayed: Array<{ projector: string; reason: string }>;
}

/** `ledger trial-balance`: one row per currency. */
export type TrialBalanceJson = Array<{ currency: string; balanceSum: string; accounts: number; balanced: boolean }>;

/** `ledger balances --as-of`: one row per account and currency. */
export type BalancesJson = Array<{ accountId: string; currency: string; balance: string; isSystem: boolean }>;

/** `ledger statement` (`--format json`, the default, or `--json`): one document, streamed as it is read. */
export interface StatementJson extends StatementHeader {
  lines: StatementLine[];
  closingBalance: string;
}

/** `export payment`, `export events`: JSON lines, one stored event each, in stream or feed order. */
export interface ExportedEventJson {
  id: string;
  stream: string;
  /** Decimal strings: revisions and positions are 64-bit. */
  revision: string;
  position: string;
  type: string;
  schemaVersion: number;
  data: unknown;
  metadata: unknown;
  recordedAt: string;
}
