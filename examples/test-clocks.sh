# Test clocks: 48 hours of a deposit's life, and a payment's expiry, in seconds (GNU date computes the instants).
source examples/lib/merchant.sh

CLOCK=$(curl "${API[@]}" -X POST "$BASE_URL/test-clocks" -d '{"name":"deposit expiry"}')
CLOCK_ID=$(jq -r .id <<<"$CLOCK")
CLOCK_START=$(jq -r .frozenTime <<<"$CLOCK")
clock_at() { date -u -d "$CLOCK_START + $1" +%Y-%m-%dT%H:%M:%S.%3NZ; }
advance_clock() {
  curl "${API[@]}" -X POST "$BASE_URL/test-clocks/$CLOCK_ID/advance" -d "{\"frozenTime\":\"$(clock_at "$1")\"}" >/dev/null
  for _ in $(seq 100); do
    [ "$(curl "${API[@]}" "$BASE_URL/test-clocks/$CLOCK_ID" | jq -r .status)" = ready ] && return
    sleep 0.2
  done
  echo "the clock did not get to $1" >&2; return 1
}

# A deposit on the clock, whose reference matches no account: it waits 48 hours for assignment.
CLOCKED_DEPOSIT_ID=$(curl "${API[@]}" -X POST "$BASE_URL/sandbox/deposits" -H "Test-Clock: $CLOCK_ID" \
  -d '{"reference":"0000003100099999999999","amount":"5000.00","currency":"ARS",
  "originator":{"firstName":"Juan","documentNumber":"20-12345678-9"}}' | jq -r .id)
advance_clock '42 hours 30 minutes'
curl "${API[@]}" "$BASE_URL/payments/unassigned?expiresWithin=6h" | jq -c '[.results[].hoursRemaining]'    # [5.5]
curl "${API[@]}" "$BASE_URL/accounts/unassigned?currency=ARS" | jq -c '[.urgent[].hoursRemaining]'      # urgent
advance_clock '48 hours 1 minute'
curl "${API[@]}" "$BASE_URL/payments/$CLOCKED_DEPOSIT_ID" | jq -c '{status}'                              # EXPIRED
curl "${API[@]}" "$BASE_URL/payments/$CLOCKED_DEPOSIT_ID/refund" | jq -c '[.refunds[] | {status, totalAmount}]'
curl "${API[@]}" "$BASE_URL/payments/$CLOCKED_DEPOSIT_ID/events" \
  | jq -c '[.events[] | select(.type == "PaymentExpired") | {occurredAt, recordedAt}]'     # business time, real time

# A payment on the same clock that expires when the clock passes its expiresAt.
LOJA_ID=$(curl "${API[@]}" -X POST "$BASE_URL/identities" -d '{"type":"ORGANIZATION","name":"Loja","country":"BRA"}' | jq -r .id)
LOJA_ACCOUNT_NUMBER=$(curl "${API[@]}" -X POST "$BASE_URL/accounts" \
  -d "{\"identityId\":\"$LOJA_ID\",\"type\":\"CHECKING\",\"currency\":\"BRL\"}" | jq -r .accountNumber)
EXPIRING_ID=$(curl "${API[@]}" -X POST "$BASE_URL/payments" -H "Test-Clock: $CLOCK_ID" -d "{\"externalId\":\"expiring-1\",
  \"identityId\":\"$LOJA_ID\",\"accountNumber\":\"$LOJA_ACCOUNT_NUMBER\",\"totalAmount\":\"100.00\",\"currency\":\"BRL\",
  \"type\":\"PURCHASE\",\"expiresAt\":\"$(clock_at '49 hours')\"}" | jq -r .id)
advance_clock '50 hours'
curl "${API[@]}" "$BASE_URL/payments/$EXPIRING_ID" | jq -c '{status}'                                    # EXPIRED
curl "${API[@]}" -X DELETE "$BASE_URL/test-clocks/$CLOCK_ID" -o /dev/null -w 'clock deleted: HTTP %{http_code}\n'
