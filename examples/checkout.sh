# Checkout: a session paid through the API, its hosted page, and a payment link that opens a session per payer.
source examples/lib/merchant.sh

ROASTER_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Tostaduría Sur","country":"CHL"}' | jq -r .id)
ROASTER_ACCOUNT_NUMBER=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$ROASTER_ID\",\"type\":\"CHECKING\",\"currency\":\"CLP\"}" | jq -r .accountNumber)
# One coffee of 10000 CLP with 19 % IVA: 11900, all of it to the account.
CHECKOUT_BODY="{\"items\":[{\"description\":\"Coffee 1 kg\",\"preTaxAmount\":\"10000\",
    \"tax\":{\"name\":\"IVA\",\"type\":\"PERCENTAGE\",\"value\":\"19\"}}],
  \"currency\":\"CLP\",\"paymentMethodsAllowed\":[\"CARD\"],\"duration\":1800,
  \"destinations\":[{\"type\":\"ACCOUNT\",\"amount\":\"11900\",\"account\":{\"type\":\"CHECKING\",\"currency\":\"CLP\",
    \"accountNumber\":\"$ROASTER_ACCOUNT_NUMBER\",\"accountHolder\":\"Tostaduría Sur\"}}],
  \"owner\":{\"identityId\":\"$ROASTER_ID\"},\"customerRequirements\":[\"email\"],
  \"successUrl\":\"https://shop.example.com/thanks\",\"failedUrl\":\"https://shop.example.com/sorry\"}"

SESSION=$(curl "${API[@]}" -X POST "$BASE_URL/checkout-sessions" -d "$CHECKOUT_BODY")
SESSION_ID=$(jq -r .id <<<"$SESSION")
jq -c '{status, preTaxAmount, totalAmount, url}' <<<"$SESSION"
# The hosted page a payer opens (in a browser: pay with 4111 1111 1111 1111; 4000 0000 0000 0002 is declined).
curl -sS --fail-with-body -o /dev/null -w 'hosted page: HTTP %{http_code}\n' "$(jq -r .url <<<"$SESSION")"

# Or pay it through the API, with the payer's email that the session requires.
curl "${API[@]}" -X POST "$BASE_URL/checkout-sessions/$SESSION_ID/payments" -d '{"origins":[{"type":"CARD",
  "card":{"number":"4111111111111111","holder":"Ana Rojas","expiryMonth":"12","expiryYear":"2030","cvv":"123"}}],
  "customer":{"email":"ana@example.com","firstName":"Ana"}}' | jq -c '{type, status, totalAmount, checkoutSessionId}'
for _ in $(seq 120); do
  SESSION_STATUS=$(curl "${API[@]}" "$BASE_URL/checkout-sessions/$SESSION_ID" | jq -r .status)
  [ "$SESSION_STATUS" = FINISHED ] && break
  sleep 1
done
echo "session $SESSION_ID: $SESSION_STATUS"                     # FINISHED once the card settles
curl "${API[@]}" "$BASE_URL/payments?checkoutSessionId=$SESSION_ID" | jq -c '[.results[] | {status, totalAmount}]'

# A payment link: its url opens a new session for each payer; the API does the same.
LINK=$(curl "${API[@]}" -X POST "$BASE_URL/payment-links" -d "$CHECKOUT_BODY")
jq -c '{status, url}' <<<"$LINK"
curl "${API[@]}" -X POST "$BASE_URL/payment-links/token/$(jq -r .checkoutToken <<<"$LINK")/checkout-sessions" \
  | jq -c '{status, totalAmount}'                                  # ATTEMPT
curl "${API[@]}" -X DELETE "$BASE_URL/payment-links/$(jq -r .id <<<"$LINK")" -o /dev/null -w 'link removed: HTTP %{http_code}\n'
