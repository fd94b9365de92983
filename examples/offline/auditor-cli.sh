# Auditing from the command line, with the service stopped (embedded mode; beside it on Postgres).
npm run cli -- integrity seal --json | jq -r .digest        # keep it outside the database; null: nothing new to seal
AUDIT_REPORT=$(mktemp)
npm run cli -- verify integrity --output "$AUDIT_REPORT"    # exit 0 intact, 3 a problem found
jq -c '{ok, events, streams, digests, problems}' "$AUDIT_REPORT"
npm run cli -- replay ledger accounts                       # rebuilt from the log and swapped in
npm run cli -- verify read-models ledger accounts           # equal: the read models are what the log gives
npm run cli -- export events --from 2020-01-01T00:00:00Z --to 2100-01-01T00:00:00Z --stream-prefix account- --quiet \
  | jq -s -c '.[0:5][] | {type, revision, amount: .data.amount}'
PAYMENT_TO_EXPORT=$(npm run cli -- export events --from 2020-01-01T00:00:00Z --to 2100-01-01T00:00:00Z \
  --stream-prefix payment- --quiet | jq -s -r '[.[] | select(.type == "PaymentSettled")][0].stream | ltrimstr("payment-")')
npm run cli -- export payment "$PAYMENT_TO_EXPORT" | jq -c '{type, revision, recordedAt}'
