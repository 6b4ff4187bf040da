// repeat runs a poll of a component while it is shown.

/** repeat calls fn now, and again ms after each call has ended, until
 * the function it returns is called: an $effect returns it, so the
 * polling ends with the component (or when what it reads changes). */
export function repeat(ms: number, fn: () => Promise<void>): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout>;
  const loop = async () => {
    await fn();
    if (!stopped) timer = setTimeout(loop, ms);
  };
  void loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** syncModal shows dialog as a modal while open, and closes it when not. */
export function syncModal(dialog: HTMLDialogElement, open: boolean) {
  if (open && !dialog.open) dialog.showModal();
  else if (!open && dialog.open) dialog.close();
}
