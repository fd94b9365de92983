# Sourced by the guides' examples (`source examples/lib/merchant.sh`): a new merchant (client) made through the
# operator route, its token, and in API the curl arguments of every call it makes. OPERATOR holds the operator's.
# Needs the service's OPERATOR_API_KEY; BASE_URL is http://localhost:3000 unless set.
BASE_URL=${BASE_URL:-http://localhost:3000}
OPERATOR_API_KEY=${OPERATOR_API_KEY:-change-me}
OPERATOR=(-sS --fail-with-body -H "x-operator-key: $OPERATOR_API_KEY" -H 'content-type: application/json')
MERCHANT=$(curl "${OPERATOR[@]}" -X POST "$BASE_URL/operator/clients" -d '{"name":"Example Shop"}')
MERCHANT_CLIENT_ID=$(jq -r .clientId <<<"$MERCHANT")
MERCHANT_API_KEY=$(jq -r .apiKey <<<"$MERCHANT")
MERCHANT_TOKEN=$(curl -sS --fail-with-body -X POST "$BASE_URL/auth" -H "x-api-key: $MERCHANT_API_KEY" \
  -H 'content-type: application/json' -d "$(jq -c '{clientId, clientSecret}' <<<"$MERCHANT")" | jq -r .accessToken)
API=(-sS --fail-with-body -H "x-api-key: $MERCHANT_API_KEY" -H "authorization: Bearer $MERCHANT_TOKEN"
  -H 'user-agent: examples/1.0' -H 'content-type: application/json')
