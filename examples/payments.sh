# Payments: a push payment the provider delivers, a card the sandbox declines, one held for review and approved.
source examples/lib/merchant.sh
PROVIDER_SECRET=${PROVIDER_SECRET:-sandbox-provider-secret}   # the service's PROVIDER_SECRET (this is its default)

SELLER_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Loja Exemplo","country":"BRA"}' | jq -r .id)
SELLER_ACCOUNT_NUMBER=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$SELLER_ID\",\"type\":\"CHECKING\",\"currency\":\"BRL\"}" | jq -r .accountNumber)
PAYMENT_BASE="\"identityId\":\"$SELLER_ID\",\"accountNumber\":\"$SELLER_ACCOUNT_NUMBER\",\"currency\":\"BRL\",\"type\":\"PURCHASE\""

# A payment naming no method waits for the payer; the provider's signed notification says the money arrived.
PUSH_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments" -H 'idempotency-key: payments-push-1' \
  -d "{\"externalId\":\"push-1\",\"totalAmount\":\"120.00\",$PAYMENT_BASE}" | jq -r .id)
PUSH_SIGNATURE=$(printf %s "$PUSH_ID" | openssl dgst -sha256 -hmac "$PROVIDER_SECRET" | sed 's/.* //')
curl -sS --fail-with-body -X POST "$BASE_URL/payments/received" -H 'user-agent: my-bank/1.0' \
  -H 'content-type: application/json' -d "{\"transactionId\":\"$PUSH_ID\",\"signature\":\"$PUSH_SIGNATURE\"}" \
  | jq -c '{id, status}'
curl "${API[@]}" "$BASE_URL/payments/$PUSH_ID" | jq -c '{status, totalAmount, currency}'   # SETTLED: INSTANT, no fee

# The issuer declines card 4000000000000002: FAILED with CARD_DECLINED.
DECLINED_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments" -d "{\"externalId\":\"declined-1\",\"totalAmount\":\"50.00\",
  $PAYMENT_BASE,\"origins\":[{\"type\":\"CARD\",\"card\":{\"number\":\"4000000000000002\",\"holder\":\"Ana Souza\",
  \"expiryMonth\":\"12\",\"expiryYear\":\"2030\",\"cvv\":\"123\"}}]}" | jq -r .id)
for _ in $(seq 30); do
  DECLINED=$(curl "${API[@]}" "$BASE_URL/payments/$DECLINED_ID")
  [ "$(jq -r .status <<<"$DECLINED")" = FAILED ] && break
  sleep 1
done
jq -c '{status, failureReason}' <<<"$DECLINED"

# "sandbox:review" in the description holds the payment for review; the operator approves it.
REVIEWED_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments" \
  -d "{\"externalId\":\"review-1\",\"totalAmount\":\"80.00\",\"description\":\"sandbox:review\",$PAYMENT_BASE}" | jq -r .id)
curl "${API[@]}" "$BASE_URL/payments/$REVIEWED_ID" | jq -c '{status}'                    # REQUIRES_REVIEW
curl "${OPERATOR[@]}" -X POST "$BASE_URL/operator/payments/$REVIEWED_ID/review" -d '{"decision":"APPROVED"}' \
  | jq -c '{status}'                                                                   # back to CREATED

# The list, and one payment's history for auditors.
curl "${API[@]}" "$BASE_URL/payments?status=SETTLED&sort=createdAt:desc" | jq -c '[.results[].externalId]'
curl "${API[@]}" "$BASE_URL/payments/$PUSH_ID/events" | jq -c "[.events[] | {type, actor}]"
