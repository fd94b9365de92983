/**
 * Payment attempts: check a payment as `POST /payments` would (the destination account, every node against the
 * catalog, limits, fees, exchange), and that the platform accounts its ACCOUNT nodes name exist, and record the outcome on the attempt's own stream, with status ATTEMPT.
 * Nothing runs: no customer is created, no provider is asked, no money moves.
 */
import { createdId } from '../eventstore/deterministicId.ts';
import type { AttemptNodeInput, CreateAttempt } from '../../schemas/attempts.ts';
import { paymentInitiationType, type PaymentNodeInput } from '../../schemas/paymentNodes.ts';
import type { Catalog, CatalogNodeType } from '../catalog/catalog.ts';
import { customerOfClient } from '../customers/handlers.ts';
import { domainInvalid, domainNotFound } from '../domain/errors.ts';
import { runCommand } from '../eventstore/streams.ts';
import type { EventMetadata } from '../eventstore/port.ts';
import { formatAmount, toDecimal, zeroAmount } from '../domain/money.ts';
import { amountIn, checkNodeAccounts, destinationOf, refuseRefundType } from '../payments/handlers.ts';
import { checkOriginAmounts, pricedNode, validateNode, type NodeContext, type NodeSide } from '../payments/nodes.ts';
import { feesFor, purchaseFor, totalFee } from '../payments/pricing.ts';
import { MAX_PAYMENT_NODES } from '../../schemas/paymentNodes.ts';
import type { Platform } from '../platform.ts';
import { attemptStreamType } from './decider.ts';
import { attemptStream, type StoredAttemptNode } from './events.ts';
import type { AttemptView } from './ports.ts';
import { creatingOn } from '../testClocks/binding.ts';

/** The pay-in method a payment initiation names: a catalog type by its name (FINTOC) or node key (fintoc). */
function initiatedMethod(catalog: Catalog, origin: string, path: string): CatalogNodeType {
  const method = catalog.nodeType(origin) ?? catalog.nodeTypes.find((type) => type.nodeKey === origin);
  if (!method) throw domainInvalid(`${path}: unknown pay-in method ${JSON.stringify(origin)}`);
  if (!method.directions.includes('PAY_IN')) throw domainInvalid(`${path}: ${method.type} is pay-out only; a payment initiation starts a pay-in method`);
  // A card is paid with the card itself, never started from the payer's bank.
  if (method.type === 'CARD') throw domainInvalid(`${path}: CARD cannot be initiated; send a CARD origin with its card`);
  return method;
}

/** The holder of a node as a payment node stores it, plus the nickname an attempt keeps. */
function holderOf(identity: AttemptNodeInput['identity']) {
  if (!identity) return { asPayment: undefined, stored: null };
  const asPayment = {
    ...(identity.name !== undefined ? { name: identity.name } : {}),
    ...(identity.lastname !== undefined ? { lastname: identity.lastname } : {}),
    ...((identity.documentNumber ?? identity.dni) !== undefined ? { documentNumber: identity.documentNumber ?? identity.dni } : {}),
    ...((identity.externalId ?? identity.userId) !== undefined ? { externalId: identity.externalId ?? identity.userId } : {}),
  };
  return { asPayment, stored: { ...asPayment, ...(identity.nickname !== undefined ? { nickname: identity.nickname } : {}) } };
}

function attemptNode(catalog: Catalog, node: AttemptNodeInput, side: NodeSide, path: string, context: NodeContext): StoredAttemptNode {
  const { paymentInitiation, identity, ...rest } = node;
  const holder = holderOf(identity);
  if (node.type === paymentInitiationType) {
    if (side === 'destinations') throw domainInvalid(`${path}: type ${paymentInitiationType} cannot be used as a destination (it is pay-in only)`);
    if (!paymentInitiation) throw domainInvalid(`${path}: type ${paymentInitiationType} expects the object "paymentInitiation"`);
    const objects = Object.keys(rest).filter((key) => !['type', 'name', 'externalId', 'amount', 'currency', 'metadata'].includes(key));
    if (objects.length > 0) {
      throw domainInvalid(`${path}: type ${paymentInitiationType} expects no node object; found ${objects.map((key) => `"${key}"`).join(', ')}`);
    }
    const method = initiatedMethod(catalog, paymentInitiation.origin, `${path}.paymentInitiation.origin`);
    const priced = pricedNode(method, { ...rest, identity: holder.asPayment }, path, context);
    return {
      ...priced, type: paymentInitiationType, identity: holder.stored,
      paymentInitiation: { method: method.type, referenceId: paymentInitiation.referenceId ?? null },
    };
  }
  if (paymentInitiation) throw domainInvalid(`${path}.paymentInitiation: only with type ${paymentInitiationType}`);
  const stored = validateNode(catalog, { ...rest, identity: holder.asPayment } as PaymentNodeInput, side, path, context);
  return { ...stored, identity: holder.stored };
}

function attemptNodes(
  catalog: Catalog, nodes: readonly AttemptNodeInput[] | undefined, side: NodeSide, context: NodeContext,
): StoredAttemptNode[] {
  if (nodes === undefined) return [];
  if (nodes.length > MAX_PAYMENT_NODES) throw domainInvalid(`${side}: at most ${MAX_PAYMENT_NODES} nodes`);
  return nodes.map((node, index) => attemptNode(catalog, node, side, `${side}[${index}]`, context));
}

/**
 * What the account would be paid: `totalAmount`, else the sum of the destinations' amounts (every destination
 * naming one in `currency`), else the sum of the origins' (the same, when the payer pays in `currency`).
 */
function totalOf(input: CreateAttempt): string {
  const { currency } = input;
  if (input.totalAmount !== undefined) return amountIn('totalAmount', input.totalAmount, currency);
  const sumOf = (side: NodeSide, nodes: readonly AttemptNodeInput[] | undefined) => {
    if (!nodes?.length || nodes.some((node) => node.amount === undefined || (node.currency ?? currency) !== currency)) return null;
    const sum = nodes.reduce((total, node, n) => total.plus(toDecimal(amountIn(`${side}[${n}].amount`, node.amount!, currency))),
      toDecimal(zeroAmount(currency)));
    return formatAmount(sum, currency);
  };
  const samePurchaseCurrency = (input.purchaseCurrency ?? currency) === currency;
  const total = sumOf('destinations', input.destinations) ?? (samePurchaseCurrency ? sumOf('origins', input.origins) : null);
  if (total === null) {
    throw domainInvalid(`totalAmount: required unless every destination (or, without an exchange, every origin) names its amount in ${currency}`);
  }
  return total;
}

/** Checks and records an attempt; answers its read-model row and the read models catching up. */
export async function createAttempt(
  wallPlatform: Platform, clientId: string, input: CreateAttempt, wallMetadata: EventMetadata, testClockId: string | null = null,
): Promise<{ row: AttemptView; readModels: Promise<void> }> {
  refuseRefundType(input.type);
  const attemptId = createdId(wallPlatform.runtime, wallMetadata, 'attempt');
  // Bound first: a clock that is not the client's is a 404 with nothing recorded; its quotes follow the clock.
  const { platform, metadata, clockId } = await creatingOn(wallPlatform, clientId, testClockId, 'payment_attempt', attemptId, wallMetadata);
  const { catalog, provider } = platform;
  const now = platform.runtime.now();
  const [{ account }, customer] = await Promise.all([
    destinationOf(platform, clientId, input),
    input.customerId ? customerOfClient(platform, clientId, input.customerId) : Promise.resolve(null),
  ]);
  if (input.customerId && !customer) throw domainNotFound(`customer ${input.customerId} not found`);

  const totalAmount = totalOf(input);
  const purchase = purchaseFor({
    catalog, totalAmount, currency: input.currency, purchaseAmount: input.purchaseAmount, purchaseCurrency: input.purchaseCurrency,
    now, quoteTtlSeconds: provider.quoteTtlSeconds(input),
  });
  const charged = { currency: purchase.purchaseCurrency ?? input.currency, amount: purchase.purchaseAmount ?? totalAmount };
  const origins = attemptNodes(catalog, input.origins, 'origins', { ...charged, now });
  checkOriginAmounts(input.origins, origins, charged);
  const destinations = attemptNodes(catalog, input.destinations, 'destinations', { currency: input.currency, amount: totalAmount, now });
  await checkNodeAccounts(platform, clientId, { origins, destinations });
  const first = origins[0];
  const method = first ? catalog.nodeType(first.paymentInitiation?.method ?? first.type) : undefined;
  const fees = feesFor(catalog, method, totalAmount, input.currency);
  const feeAmount = totalFee(fees, input.currency);
  if (toDecimal(feeAmount).greaterThanOrEqualTo(toDecimal(totalAmount))) {
    throw domainInvalid(`totalAmount: ${totalAmount} ${input.currency} does not cover the ${method!.type} fee of ${feeAmount} ${input.currency}`);
  }

  const { events, readModels } = await runCommand(platform, attemptStreamType, attemptStream(attemptId), {
    type: 'RecordAttempt', tenant: { clientId }, now,
    attempt: {
      attemptId, clientId, externalId: input.externalId ?? null, identityId: input.identityId,
      identityExternalId: input.identityExternalId ?? null, accountId: account.account_id, accountNumber: account.account_number,
      totalAmount, currency: input.currency, description: input.description ?? null,
      product: input.product ?? purchase.exchange?.product ?? null, type: input.type, purchaseAmount: purchase.purchaseAmount,
      purchaseCurrency: purchase.purchaseCurrency, exchange: purchase.exchange, origins, destinations, fees, feeAmount,
      method: method?.type ?? null, settlement: method?.settlement ?? 'INSTANT', customerId: customer?.customerId ?? null,
      ...(clockId ? { testClockId: clockId } : {}),
    },
  }, metadata, { expectNewStream: true });
  return { row: platform.reads.attempts.viewOf(events[0]!.data), readModels };
}
