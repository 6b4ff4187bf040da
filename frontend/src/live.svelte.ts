// live holds what the engine last said, refreshed by polling. Each source
// keeps the raw text of its last answer and only replaces its value when
// the text changed, so an unchanged list causes no re-render at all.

import {
  api, ApiError, type Capabilities, type ExecPolicy, type Fetched, type Integration, type ListQuery, type RunQuery, type RunRecord, type Sandbox,
  type Schedule, type SecurityEvent, type SecurityQuery, type Settings, type Status, type TenantView,
} from './api';

/** How often each source is polled, in milliseconds. */
const every = {
  sandboxes: 1000,
  runs: 1000,
  schedules: 2000,
  // Probes are cached by the engine for 20 s; asking more often is useless.
  caps: 5000,
  // Changed from here (answers are applied at once) or from the CLI.
  policy: 3000,
  settings: 3000,
  // Settings files of agents, read by the engine: changed by senclaw integrate.
  integrations: 5000,
  // The tenants (the filters' choices) and the engine's status (the LAN
  // listener): changed by the owner, seldom.
  tenants: 5000,
  status: 5000,
  // The Security events card is live: a refusal shows within 2 s.
  security: 2000,
};

type Key = keyof typeof every;

class Live {
  caps = $state.raw<Capabilities | null>(null);
  policy = $state.raw<ExecPolicy | null>(null);
  settings = $state.raw<Settings | null>(null);
  /** One page of each list: what the cards ask for (page, filter) and
   * what matched in all. Thousands of sandboxes make a page of them. */
  sandboxes = $state.raw<Sandbox[] | null>(null);
  sandboxQuery = $state<ListQuery>({ offset: 0, limit: 25, q: '', tenant: '' });
  sandboxTotal = $state(0);
  sandboxesRunning = $state(0);
  runs = $state.raw<RunRecord[] | null>(null);
  integrations = $state.raw<Integration[] | null>(null);
  schedules = $state.raw<Schedule[] | null>(null);
  runQuery = $state<RunQuery>({ offset: 0, limit: 30, q: '', source: '', sandboxId: '', refused: false, tenant: '' });
  runTotal = $state(0);
  /** The schedules card's tenant ("" every tenant's, "-" the owner's own). */
  scheduleTenant = $state('');
  tenants = $state.raw<TenantView[] | null>(null);
  status = $state.raw<Status | null>(null);
  securityEvents = $state.raw<SecurityEvent[] | null>(null);
  securityQuery = $state<SecurityQuery>({ principal: '', kind: '' });
  /** The last error of each source, "" when its last poll worked. */
  errors = $state<Record<Key, string>>({ caps: '', policy: '', settings: '', sandboxes: '', runs: '', integrations: '', schedules: '', tenants: '', status: '', security: '' });
  /** now ticks with the polls, for "5 s ago". */
  now = $state(Date.now());
  /** answeredAt is when the engine last answered a poll (0: never). */
  answeredAt = $state(0);
  /** offline is true while every source's last poll failed: what the
   * page shows is stale, and its controls are off (App.svelte). */
  offline = $derived(Object.values(this.errors).every((e) => e !== ''));

  private last: Partial<Record<Key, string>> = {};
  private timers: Partial<Record<Key, ReturnType<typeof setTimeout>>> = {};

  /** loaded is true once every source has answered (or failed) once. */
  loaded = $derived(
    (this.caps !== null || this.errors.caps !== '') &&
      (this.policy !== null || this.errors.policy !== '') &&
      (this.settings !== null || this.errors.settings !== '') &&
      (this.sandboxes !== null || this.errors.sandboxes !== '') &&
      (this.runs !== null || this.errors.runs !== '') &&
      (this.schedules !== null || this.errors.schedules !== ''),
  );

  private async poll<T>(key: Key, fetcher: () => Promise<Fetched<T>>, apply: (v: T) => void) {
    try {
      const got = await fetcher();
      this.errors[key] = '';
      this.answeredAt = Date.now();
      if (got.text !== this.last[key]) {
        this.last[key] = got.text;
        apply(got.data);
      }
    } catch (err) {
      this.errors[key] = err instanceof ApiError ? err.message : String(err);
    }
  }

  private sources: Record<Key, () => Promise<void>> = {
    caps: () => this.poll('caps', () => api.caps(), (v) => (this.caps = v)),
    policy: () => this.poll('policy', () => api.policy(), (v) => (this.policy = v)),
    settings: () => this.poll('settings', () => api.settings(), (v) => (this.settings = v)),
    sandboxes: () =>
      this.poll('sandboxes', () => api.sandboxes({ ...this.sandboxQuery }), (v) => {
        this.sandboxes = v.sandboxes;
        this.sandboxTotal = v.total;
        this.sandboxesRunning = v.running;
      }),
    runs: () =>
      this.poll('runs', () => api.runs({ ...this.runQuery }), (v) => {
        this.runs = v.runs;
        this.runTotal = v.total;
      }),
    integrations: () => this.poll('integrations', () => api.integrations(), (v) => (this.integrations = v.integrations)),
    schedules: () => this.poll('schedules', () => api.schedules(this.scheduleTenant), (v) => (this.schedules = v.schedules)),
    tenants: () => this.poll('tenants', () => api.tenants(), (v) => (this.tenants = v.tenants)),
    status: () => this.poll('status', () => api.status(), (v) => (this.status = v)),
    security: () => this.poll('security', () => api.securityEvents({ ...this.securityQuery }), (v) => (this.securityEvents = v.events)),
  };

  /** showSchedules and showSecurity change a card's filter and fetch it
   * at once. */
  async showSchedules(tenant: string) {
    this.scheduleTenant = tenant;
    await this.refresh('schedules');
  }

  async showSecurity(q: Partial<SecurityQuery>) {
    this.securityQuery = { ...this.securityQuery, ...q };
    await this.refresh('security');
  }

  /** showSandboxes and showRuns change the page or the filter of a list
   * and fetch it at once. */
  async showSandboxes(q: Partial<ListQuery>) {
    this.sandboxQuery = { ...this.sandboxQuery, ...q };
    await this.refresh('sandboxes');
  }

  async showRuns(q: Partial<RunQuery>) {
    this.runQuery = { ...this.runQuery, ...q };
    await this.refresh('runs');
  }

  /** refresh polls the named sources now (after an action changed them). */
  async refresh(...keys: Key[]) {
    await Promise.all(keys.map((k) => this.sources[k]()));
  }

  /** start polls every source, each on its own timer; a poll starts only
   * after the previous one of the same source ended, and a hidden page
   * polls ten times less often. */
  start() {
    for (const key of Object.keys(every) as Key[]) {
      const loop = async () => {
        await this.sources[key]();
        if (key === 'sandboxes') this.now = Date.now();
        const slow = document.visibilityState === 'hidden' ? 10 : 1;
        this.timers[key] = setTimeout(loop, every[key] * slow);
      };
      void loop();
    }
  }

  /** setPolicy saves a change of the enforcement switches and applies the
   * answer. It throws ApiError, for the caller to show next to the field. */
  async setPolicy(p: Partial<ExecPolicy>) {
    const saved = await api.setPolicy(p);
    this.last.policy = undefined;
    this.policy = saved;
  }

  async setSettings(s: Partial<Settings>) {
    const saved = await api.setSettings(s);
    this.last.settings = undefined;
    this.settings = saved;
  }
}

export const live = new Live();
