// The selected session's pending effects (its outbox, issue 24): one row per effect with its
// status and attempts, drawn from the session's context as the snapshots arrive.
import { $ } from './state.js';

/**
 * The rows of the effects table for an actor's `context`: one per pending effect, oldest
 * first; `undefined` for an actor that has no outbox (not a session), so the panel hides.
 * Reads the stored shape defensively: the page must not break on an odd snapshot.
 */
export function effectRows(context) {
  const pending = context?.pendingEffects;
  if (!Array.isArray(pending)) return undefined;
  return pending.map((entry) => ({
    id: String(entry?.id ?? '?'),
    type: String(entry?.effect?.type ?? '?'),
    status: String(entry?.status ?? '?'),
    attempts: Number.isFinite(entry?.attempts) ? entry.attempts : 0,
    lastError: typeof entry?.lastError === 'string' ? entry.lastError : '',
    nextAttemptAt: Number.isFinite(entry?.nextAttemptAt)
      ? new Date(entry.nextAttemptAt).toISOString()
      : '',
  }));
}

/** Draws the effects panel for `context`, or hides it for an actor with no outbox. */
export function renderEffects(context) {
  const rows = effectRows(context);
  $('effects-panel').hidden = rows === undefined;
  const body = $('effects').tBodies[0];
  if (rows === undefined) return body.replaceChildren();
  if (rows.length === 0) {
    const cell = document.createElement('td');
    cell.colSpan = 5;
    cell.className = 'none';
    cell.textContent = '(none pending)';
    const row = document.createElement('tr');
    row.append(cell);
    return body.replaceChildren(row);
  }
  body.replaceChildren(
    ...rows.map((effect) => {
      const row = document.createElement('tr');
      row.dataset.effect = effect.id;
      row.dataset.status = effect.status;
      if (effect.status === 'failed') row.className = 'failed';
      const status = effect.nextAttemptAt
        ? `${effect.status} (next ${effect.nextAttemptAt})`
        : effect.status;
      // textContent only: an error message is shown as text, never as markup.
      for (const text of [
        effect.id,
        effect.type,
        status,
        String(effect.attempts),
        effect.lastError,
      ]) {
        const cell = document.createElement('td');
        cell.textContent = text;
        row.append(cell);
      }
      return row;
    }),
  );
}
