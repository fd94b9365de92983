# Identities, accounts and customers: an organization with a child, verified by the operator; accounts; a payer.
source examples/lib/merchant.sh

COMPANY_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Acme SpA","country":"CHL"}' | jq -r .id)
BRANCH_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" \
  -d '{"type":"ORGANIZATION","name":"Acme Sur","country":"CHL"}' | jq -r .id)
curl "${API[@]}" -X POST "$BASE_URL/identities/$COMPANY_ID/children" -d "[\"$BRANCH_ID\"]" -o /dev/null
curl "${OPERATOR[@]}" -X POST "$BASE_URL/operator/identities/$COMPANY_ID/status" -d '{"status":"ACTIVE"}' \
  | jq -c '{name, status}'

# An account and a sub-account (same identity and currency); account numbers are generated, never reused.
MAIN_ACCOUNT=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$COMPANY_ID\",\"type\":\"CHECKING\",\"currency\":\"CLP\",\"name\":\"Main\"}")
MAIN_ACCOUNT_ID=$(jq -r .id <<<"$MAIN_ACCOUNT")
jq -c '{accountNumber, balance, availableFunds, status}' <<<"$MAIN_ACCOUNT"
curl "${API[@]}" -X POST "$BASE_URL/accounts" -d "{\"identityId\":\"$COMPANY_ID\",\"type\":\"SAVINGS\",\"currency\":\"CLP\",
  \"name\":\"Reserve\",\"parentId\":\"$MAIN_ACCOUNT_ID\"}" | jq -c '{type, parentId}'
# Blocked: readable, receives nothing. Then active again.
curl "${API[@]}" -X PATCH "$BASE_URL/accounts/$MAIN_ACCOUNT_ID" -d '{"status":"BLOCKED"}' | jq -c '{status}'
curl "${API[@]}" -X PATCH "$BASE_URL/accounts/$MAIN_ACCOUNT_ID" -d '{"status":"ACTIVE"}' | jq -c '{status}'

# A payer; the operator raises its operation level (BASIC at first).
PAYER_ID=$(curl "${API[@]}" -X POST "$BASE_URL/customers" -d '{"firstName":"Ana","lastName":"Rojas",
  "email":"ana.rojas@example.com","documentType":"RUT","documentNumber":"12.345.678-5","country":"CHL"}' | jq -r .id)
curl "${OPERATOR[@]}" -X POST "$BASE_URL/operator/customers/$PAYER_ID/operation-level" -d '{"operationLevel":"FULL"}' \
  | jq -c '{operationLevel}'
curl "${API[@]}" "$BASE_URL/customers/$PAYER_ID" | jq -c '{operationLevel, isDocumented}'
