# The ledger from the command line, with the service stopped (embedded mode; beside it on Postgres).
npm run cli -- ledger trial-balance                                   # every currency sums to zero
npm run cli -- ledger balances --as-of 2100-01-01T00:00:00Z --json | jq -c '[.[] | select(.isSystem | not)][0:3][]'
# The statement of an account that holds money: its id, as balances names it.
STATEMENT_ACCOUNT_ID=$(npm run cli -- ledger balances --as-of 2100-01-01T00:00:00Z --json \
  | jq -r '[.[] | select((.isSystem | not) and .balance != "0.00" and .balance != "0")][0].accountId')
npm run cli -- ledger statement "$STATEMENT_ACCOUNT_ID" --from 2020-01-01T00:00:00Z --to 2100-01-01T00:00:00Z --format csv
npm run cli -- ledger statement "$STATEMENT_ACCOUNT_ID" --from 2020-01-01T00:00:00Z --to 2100-01-01T00:00:00Z --json --quiet \
  | jq -c '{openingBalance, closingBalance, amounts: [.lines[].amount]}'
