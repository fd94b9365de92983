# Refunds: a settled payment refunded in part, then what is left of it; one the provider rejects.
source examples/lib/merchant.sh
PROVIDER_SECRET=${PROVIDER_SECRET:-sandbox-provider-secret}

STORE_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Refund Store","country":"BRA"}' | jq -r .id)
STORE_ACCOUNT_NUMBER=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$STORE_ID\",\"type\":\"CHECKING\",\"currency\":\"BRL\"}" | jq -r .accountNumber)

# A push payment of 120.00 BRL, delivered by the provider: SETTLED at once.
SALE_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments" -d "{\"externalId\":\"sale-1\",\"identityId\":\"$STORE_ID\",
  \"accountNumber\":\"$STORE_ACCOUNT_NUMBER\",\"totalAmount\":\"120.00\",\"currency\":\"BRL\",\"type\":\"PURCHASE\"}" | jq -r .id)
SALE_SIGNATURE=$(printf %s "$SALE_ID" | openssl dgst -sha256 -hmac "$PROVIDER_SECRET" | sed 's/.* //')
curl -sS --fail-with-body -X POST "$BASE_URL/payments/received" -H 'user-agent: my-bank/1.0' \
  -H 'content-type: application/json' -d "{\"transactionId\":\"$SALE_ID\",\"signature\":\"$SALE_SIGNATURE\"}" >/dev/null

# 20.00 back; a key on every refund, so that sending it again never refunds twice.
PARTIAL_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments/$SALE_ID/refund" -H 'idempotency-key: refund-sale-1-a' \
  -d '{"amount":"20.00","reason":"damaged item"}' | jq -r .id)
# The provider rejects this one ("sandbox:refund-fail"): FAILED, and its 30.00 can be refunded again.
REJECTED_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments/$SALE_ID/refund" -H 'idempotency-key: refund-sale-1-b' \
  -d '{"amount":"30.00","reason":"sandbox:refund-fail"}' | jq -r .id)
for _ in $(seq 30); do
  REFUNDS=$(curl "${API[@]}" "$BASE_URL/payments/$SALE_ID/refunds")
  [ "$(jq -r '.completedCount + .failedCount' <<<"$REFUNDS")" = 2 ] && break
  sleep 1
done
jq -c '{totalRefunded, totalFailed, maxRefundable}' <<<"$REFUNDS"     # 20.00, 30.00, 100.00
curl "${API[@]}" "$BASE_URL/payments/$REJECTED_ID" | jq -c '{type, status, parentPaymentId}'

# Without an amount: all that is left (100.00). More than that would be a 422 naming what is left.
curl "${API[@]}" -X POST "$BASE_URL/payments/$SALE_ID/refund" -H 'idempotency-key: refund-sale-1-c' -d '{}' \
  | jq -c '{status, totalAmount}'
curl "${API[@]}" "$BASE_URL/payments/$SALE_ID/refund" | jq -c '{total, refunds: [.refunds[] | {totalAmount, status}]}'
curl "${API[@]}" "$BASE_URL/refunds?status=SETTLED" | jq -c '.total'
curl "${API[@]}" "$BASE_URL/payments/$PARTIAL_ID/events" | jq -c '[.events[].type]'
