# The service runs in another terminal, with the operator routes on:  OPERATOR_API_KEY=change-me npm start
BASE_URL=${BASE_URL:-http://localhost:3000}
OPERATOR_API_KEY=${OPERATOR_API_KEY:-change-me}

# 1. A merchant (client) of your own, made by the operator route. Its secret and API key are shown only here.
SHOP=$(curl -sS --fail-with-body -X POST "$BASE_URL/operator/clients" -H "x-operator-key: $OPERATOR_API_KEY" \
  -H 'content-type: application/json' -d '{"name":"Walkthrough Shop"}')
SHOP_CLIENT_ID=$(jq -r .clientId <<<"$SHOP")
SHOP_API_KEY=$(jq -r .apiKey <<<"$SHOP")
SHOP_TOKEN=$(curl -sS --fail-with-body -X POST "$BASE_URL/auth" -H "x-api-key: $SHOP_API_KEY" \
  -H 'content-type: application/json' -d "$(jq -c '{clientId, clientSecret}' <<<"$SHOP")" | jq -r .accessToken)
# Every call: fail on an error answer (and print it), the API key, the token (an hour), a User-Agent, JSON.
SHOP_API=(-sS --fail-with-body -H "x-api-key: $SHOP_API_KEY" -H "authorization: Bearer $SHOP_TOKEN"
  -H 'user-agent: walkthrough/1.0' -H 'content-type: application/json')
curl "${SHOP_API[@]}" "$BASE_URL/me"; echo

# 2. An identity (who is paid) and its USD account.
SHOP_IDENTITY_ID=$(curl "${SHOP_API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Walkthrough Shop LLC","country":"USA"}' | jq -r .id)
SHOP_ACCOUNT=$(curl "${SHOP_API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$SHOP_IDENTITY_ID\",\"type\":\"CHECKING\",\"currency\":\"USD\",\"name\":\"Sales\"}")
SHOP_ACCOUNT_ID=$(jq -r .id <<<"$SHOP_ACCOUNT")
SHOP_ACCOUNT_NUMBER=$(jq -r .accountNumber <<<"$SHOP_ACCOUNT")

# 3. A webhook receiver on this machine (examples/webhook-receiver.ts verifies every delivery), and its endpoint.
HOOK_SECRET="whsec_$(openssl rand -base64 32)"
HOOK_PORT=${RECEIVER_PORT:-4000}
HOOK_LOG=$(mktemp)
WEBHOOK_SECRET=$HOOK_SECRET RECEIVER_PORT=$HOOK_PORT node --import tsx examples/webhook-receiver.ts >"$HOOK_LOG" &
HOOK_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$HOOK_PORT/" && break; sleep 0.2; done
HOOK_ID=$(curl "${SHOP_API[@]}" -X POST "$BASE_URL/webhooks" \
  -d "{\"url\":\"http://127.0.0.1:$HOOK_PORT/hooks\",\"secretKey\":\"$HOOK_SECRET\"}" | jq -r .id)

# 4. A card payment of 40.00 USD. The Idempotency-Key makes a retry of this POST apply once.
ORDER_ID=$(curl "${SHOP_API[@]}" -X POST "$BASE_URL/payments" -H 'idempotency-key: walkthrough-order-1' -d "{
  \"externalId\":\"order-1\",\"identityId\":\"$SHOP_IDENTITY_ID\",\"accountNumber\":\"$SHOP_ACCOUNT_NUMBER\",
  \"totalAmount\":\"40.00\",\"currency\":\"USD\",\"type\":\"PURCHASE\",\"origins\":[{\"type\":\"CARD\",
  \"card\":{\"number\":\"4111111111111111\",\"holder\":\"Ana Silva\",\"expiryMonth\":\"12\",\"expiryYear\":\"2030\",\"cvv\":\"123\"}}]}" \
  | jq -r .id)

# 5. The sandbox authorizes, captures and receives the card; the next settlement batch (each minute) settles it.
for _ in $(seq 120); do
  ORDER_STATUS=$(curl "${SHOP_API[@]}" "$BASE_URL/payments/$ORDER_ID" | jq -r .status)
  [ "$ORDER_STATUS" = SETTLED ] && break
  sleep 1
done
echo "order $ORDER_ID: $ORDER_STATUS"

# 6. Refund 15.00 of it; the sandbox pays the refund out.
curl "${SHOP_API[@]}" -X POST "$BASE_URL/payments/$ORDER_ID/refund" -H 'idempotency-key: walkthrough-refund-1' \
  -d '{"amount":"15.00","reason":"one item damaged"}'; echo
curl "${SHOP_API[@]}" "$BASE_URL/payments/$ORDER_ID/refunds" | jq -c '{totalRefunded, totalInProgress, maxRefundable}'

# 7. The receiver printed each delivery it verified: wait for payment.settled, then stop it.
for _ in $(seq 60); do
  grep -q "\"payment.settled\".*$ORDER_ID" "$HOOK_LOG" && break
  sleep 1
done
jq -c 'select(.transaction.id == "'"$ORDER_ID"'") | {eventType, status: .transaction.status}' "$HOOK_LOG"
kill "$HOOK_PID"
curl "${SHOP_API[@]}" "$BASE_URL/webhooks/$HOOK_ID/deliveries?status=DELIVERED" | jq -c '[.results[].eventType]'

# 8. The account's statement: the credit (40.00 less the card fee), the refund's hold and debit.
curl "${SHOP_API[@]}" -H 'accept: text/csv' \
  "$BASE_URL/accounts/$SHOP_ACCOUNT_ID/statement?from=2020-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"
