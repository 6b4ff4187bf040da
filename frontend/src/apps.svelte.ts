// appsLive holds the Space Apps list as the engine last said it. Unlike
// the sources of live.svelte.ts it is polled only while the Space Apps
// card is on the screen (and the page visible): the card calls watch()
// with its element. The list's view has everything the rows need, so one
// request a second serves every app; only an open Monitor panel asks for
// one app's runtime.

import { spaceApi, ApiError, type AppView, type AppsOverview } from './api';

/** How often the list is polled while the card is visible, in milliseconds. */
const every = 1000;

class AppsLive {
  apps = $state.raw<AppView[] | null>(null);
  overview = $state.raw<AppsOverview | null>(null);
  /** The last poll's error, "" when it worked. */
  error = $state('');
  /** The card's tenant ("" every tenant's, "-" the owner's own). */
  tenant = $state('');
  /** loaded is true once the list answered (or failed) once. */
  loaded = $derived(this.apps !== null || this.error !== '');

  private last = '';

  /** show narrows the list to one tenant and asks for it at once. */
  async show(tenant: string) {
    this.tenant = tenant;
    await this.refresh();
  }

  /** refresh asks for the list now (after an action changed it). */
  async refresh() {
    try {
      const got = await spaceApi.list(this.tenant);
      this.error = '';
      if (got.text !== this.last) {
        this.last = got.text;
        this.apps = got.data.apps;
        this.overview = got.data.overview;
      }
    } catch (err) {
      this.error = err instanceof ApiError ? err.message : String(err);
    }
  }

  /** watch polls about every second while el is on the screen and the
   * page is visible, and once at once whatever it shows (the page's
   * first render waits for it). It returns the function that stops. */
  watch(el: Element): () => void {
    let onScreen = true;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight = false;
    const visible = () => onScreen && document.visibilityState !== 'hidden';
    const loop = async () => {
      clearTimeout(timer);
      timer = undefined;
      if (inFlight || stopped) return;
      inFlight = true;
      await this.refresh();
      inFlight = false;
      if (!stopped && visible()) timer = setTimeout(loop, every);
    };
    // Coming back on the screen asks at once, then every second again.
    const wake = () => {
      if (visible() && timer === undefined) void loop();
    };
    const observer = new IntersectionObserver((entries) => {
      onScreen = entries.some((e) => e.isIntersecting);
      wake();
    });
    observer.observe(el);
    document.addEventListener('visibilitychange', wake);
    void loop();
    return () => {
      stopped = true;
      clearTimeout(timer);
      observer.disconnect();
      document.removeEventListener('visibilitychange', wake);
    };
  }
}

export const appsLive = new AppsLive();
