import { expect } from 'chai';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('configuration: projection leases', () => {
  it('defaults to a 5 s lease renewed every second', () => {
    const config = loadConfig({});
    expect([config.projectionLeaseMs, config.projectionHeartbeatMs]).to.deep.equal([5_000, 1_000]);
  });

  it('takes both from the environment, and refuses a heartbeat longer than half the lease, naming both', () => {
    const config = loadConfig({ PROJECTION_LEASE_MS: '2000', PROJECTION_HEARTBEAT_MS: '1000' });
    expect([config.projectionLeaseMs, config.projectionHeartbeatMs]).to.deep.equal([2_000, 1_000]);
    expect(() => loadConfig({ PROJECTION_LEASE_MS: '2000', PROJECTION_HEARTBEAT_MS: '1500' }))
      .to.throw(ConfigError, /PROJECTION_HEARTBEAT_MS \(1500\) must be at most half of PROJECTION_LEASE_MS \(2000\)/);
    expect(() => loadConfig({ PROJECTION_LEASE_MS: '5s' })).to.throw(ConfigError, /PROJECTION_LEASE_MS must be an integer/);
  });
});
