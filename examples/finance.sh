# Finance over the API: a test deposit and a correction by the operator, then the statement and a past balance.
source examples/lib/merchant.sh

LEDGER_OWNER_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Ledger Shop","country":"USA"}' | jq -r .id)
LEDGER_ACCOUNT_ID=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$LEDGER_OWNER_ID\",\"type\":\"CHECKING\",\"currency\":\"USD\"}" | jq -r .id)
curl "${OPERATOR[@]}" -X POST "$BASE_URL/operator/accounts/$LEDGER_ACCOUNT_ID/adjustments" \
  -d '{"amount":"150.00","reason":"opening deposit"}' -o /dev/null
curl "${OPERATOR[@]}" -X POST "$BASE_URL/operator/accounts/$LEDGER_ACCOUNT_ID/adjustments" \
  -d '{"amount":"-20.50","reason":"correction"}' -o /dev/null

# The statement takes the account's id (not its number); from is inclusive, to exclusive.
LEDGER_FROM=2020-01-01T00:00:00Z
LEDGER_TO=2100-01-01T00:00:00Z
curl "${API[@]}" "$BASE_URL/accounts/$LEDGER_ACCOUNT_ID/statement?from=$LEDGER_FROM&to=$LEDGER_TO" \
  | jq -c '{openingBalance, closingBalance, lines: [.lines[] | {description, amount, balanceAfter}]}'
curl "${API[@]}" -H 'accept: text/csv' "$BASE_URL/accounts/$LEDGER_ACCOUNT_ID/statement?from=$LEDGER_FROM&to=$LEDGER_TO"
curl "${API[@]}" "$BASE_URL/accounts/$LEDGER_ACCOUNT_ID/balance?asOf=$LEDGER_TO" | jq -c .
