# Deposits without a destination: one waits for assignment; assigned short of what was expected, the amount still due
# is a payment of its own, which the merchant cancels.
source examples/lib/merchant.sh

TIENDA_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Tienda","country":"ARG"}' | jq -r .id)
TIENDA_ACCOUNT_ID=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$TIENDA_ID\",\"type\":\"CHECKING\",\"currency\":\"ARS\"}" | jq -r .id)

# The sandbox provider sends its signed notification of a deposit whose reference matches no account of yours.
DEPOSIT_ID=$(curl "${API[@]}" -X POST "$BASE_URL/sandbox/deposits" -d '{"reference":"0000003100099999999999",
  "amount":"5000.00","currency":"ARS","originator":{"firstName":"Juan","lastName":"Perez","documentType":"CUIT",
  "documentNumber":"20-12345678-9"}}' | jq -r .id)
curl "${API[@]}" "$BASE_URL/payments/unassigned?expiresWithin=48h&search=perez" \
  | jq -c '[.results[] | {id, totalAmount, hoursRemaining}]'
curl "${API[@]}" "$BASE_URL/accounts/unassigned" | jq -c '{totalAmount, currency, count}'

# Assign it to the account, expecting 5500.00: UNDERPAID, and a companion payment holds the 500.00 still due.
curl "${API[@]}" -X POST "$BASE_URL/payments/$DEPOSIT_ID/assign" -H 'idempotency-key: assign-deposit-1' \
  -d "{\"accountId\":\"$TIENDA_ACCOUNT_ID\",\"expectedAmount\":\"5500.00\"}" \
  | jq -c '{status, reconciliationStatus, relatedPaymentId}'
DUE_ID=$(curl "${API[@]}" "$BASE_URL/payments/$DEPOSIT_ID" | jq -r .relatedPaymentId)
curl "${API[@]}" "$BASE_URL/payments/$DUE_ID" | jq -c '{status, totalAmount, expiresAt}'

# Nothing more is expected from the payer: cancel the amount still due.
curl "${API[@]}" -X POST "$BASE_URL/payments/$DUE_ID/cancel" | jq -c '{status}'
curl "${API[@]}" "$BASE_URL/accounts/$TIENDA_ACCOUNT_ID" | jq -c '{balance, availableFunds}'
