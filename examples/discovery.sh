# Discovery: the payment catalog, then a payment attempt checked against it (nothing runs, no money moves).
source examples/lib/merchant.sh

curl "${API[@]}" "$BASE_URL/payment-origins" | jq -c 'map(.type)'        # every pay-in node type
curl "${API[@]}" "$BASE_URL/payment-destinations" | jq -c 'length'
curl "${API[@]}" "$BASE_URL/payments/banks/CHL" | jq -c '.[0:3]'
curl "${API[@]}" "$BASE_URL/payments/available-products" | jq -c '.[] | {currency, payIn, products: [.products[].product]}'

ATTEMPT_OWNER_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Attempt Shop","country":"CHL"}' | jq -r .id)
ATTEMPT_ACCOUNT_NUMBER=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$ATTEMPT_OWNER_ID\",\"type\":\"CHECKING\",\"currency\":\"CLP\"}" | jq -r .accountNumber)
# A payment initiation from the payer's bank (FINTOC) of 25000 CLP to the account: priced, with its fee.
curl "${API[@]}" -X POST "$BASE_URL/payment-attempts" -d "{\"identityId\":\"$ATTEMPT_OWNER_ID\",
  \"accountNumber\":\"$ATTEMPT_ACCOUNT_NUMBER\",\"currency\":\"CLP\",\"type\":\"PAYMENT\",\"totalAmount\":\"25000\",
  \"origins\":[{\"type\":\"PAYMENT_INITATION\",\"paymentInitiation\":{\"origin\":\"FINTOC\",\"referenceId\":\"order-7\"}}],
  \"destinations\":[{\"type\":\"ACCOUNT\",\"account\":{\"accountNumber\":\"$ATTEMPT_ACCOUNT_NUMBER\"},
    \"identity\":{\"userId\":\"u-1\",\"name\":\"Ana\",\"dni\":\"12345678\"}}]}" \
  | jq -c '{status, fees: [.fees[] | {name, amount}], destinationAmount: .destinationAmount.amount}'
# A node missing a field its method requires is a 400 naming it.
curl -sS -H "x-api-key: $MERCHANT_API_KEY" -H "authorization: Bearer $MERCHANT_TOKEN" -H 'user-agent: examples/1.0' \
  -H 'content-type: application/json' -X POST "$BASE_URL/payment-attempts" -d "{\"identityId\":\"$ATTEMPT_OWNER_ID\",
  \"accountNumber\":\"$ATTEMPT_ACCOUNT_NUMBER\",\"currency\":\"CLP\",\"type\":\"PAYMENT\",\"totalAmount\":\"25000\",
  \"origins\":[{\"type\":\"PIX\",\"pix\":{}}]}" | jq -c '{statusCode, message}'
curl "${API[@]}" "$BASE_URL/payment-attempts?limit=5" | jq -c '{total: .pagination.total, statuses: [.data[].status]}'
