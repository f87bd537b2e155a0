import { expect, describe as group, it } from 'vitest';
import { can, describe } from '../../src/session.js';

group('can', () => {
  it('lets each role do what the roles below it do', () => {
    const ro = { authEnabled: true, role: 'read-only' };
    const rw = { authEnabled: true, role: 'read-write' };
    const admin = { authEnabled: true, role: 'admin' };
    expect([can(ro, 'read-only'), can(ro, 'read-write'), can(ro, 'admin')]).toEqual([
      true,
      false,
      false,
    ]);
    expect([can(rw, 'read-write'), can(rw, 'admin')]).toEqual([true, false]);
    expect(can(admin, 'admin')).toBe(true);
  });

  it('allows nothing to a role it does not know', () => {
    expect(can({ authEnabled: true, role: 'guest' }, 'read-only')).toBe(false);
  });

  it('shows everything while the session is unknown', () => {
    expect(can(null, 'admin')).toBe(true);
  });
});

group('describe', () => {
  it('names the tenant and the role', () => {
    expect(describe({ authEnabled: true, tenant: 'acme', role: 'admin' })).toBe('acme · admin');
    expect(describe({ authEnabled: false, tenant: 'default', role: 'admin' })).toBe(
      'no authentication',
    );
  });
});
