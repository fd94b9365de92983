-- The ledger's views in the service's schema (payments_ledger by default), with any SQL client.
SELECT * FROM payments_ledger.trial_balance;                    -- every currency sums to zero
SELECT account_id, currency, balance, available_funds
  FROM payments_ledger.account_balances WHERE NOT is_system ORDER BY balance DESC LIMIT 10;
SELECT * FROM payments_ledger.ledger_balances_at('2100-01-01T00:00:00Z') WHERE NOT is_system LIMIT 10;
SELECT entry_id, occurred_at, currency, description, line_no, account_id, amount
  FROM payments_ledger.ledger_entry_lines ORDER BY occurred_at DESC, entry_id, line_no LIMIT 10;
-- Where each projection stands.
SELECT name, version, status, schema_name, replays, checkpoint_commit, checkpoint_prepare, events_handled, last_error
  FROM payments_ledger.projection_state ORDER BY name, version;
