/**
 * A failing property names its error, not only its counterexample (loaded before the test files, .mocharc's
 * `require`): a race that fails once in a long run is then understood from its report, without a replay.
 */
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });
