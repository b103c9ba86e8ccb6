// Time travel in the page: a click on an event shows its target actor as it was right after
// it (the snapshot the server kept with the event) in the chart, title and context, under a
// "viewing past event #N" banner until "live" is pressed; "fork here" asks a journaled
// rolebox for a new session from that point (rb.fork).
import { send } from './controls.js';
import { markViewing } from './log.js';
import { $, queueRender, state } from './state.js';

/** The entry being viewed, if any. */
export function travelEntry() {
  if (state.travel === null || state.travel === undefined) return undefined;
  return state.events.findLast((entry) => entry.seq === state.travel);
}

/** Shows the snapshot after this event: its target actor is selected, as it was then. */
export function travelTo(entry) {
  const target = `${entry.app}/${entry.sessionId}`;
  if (!state.actors.has(target)) return;
  state.travel = entry.seq;
  state.selected = target;
  $('command-status').textContent = '';
  markViewing();
  queueRender();
}

/** Back to the live view of the same actor. */
export function backToLive() {
  state.travel = null;
  markViewing();
  queueRender();
}

/**
 * The actor as the chart, title and context should show it: while travelling, the event's
 * target with the snapshot after that event (the live one if the app sent none for it).
 */
export function viewedActor(actor) {
  const entry = travelEntry();
  if (!actor || !entry || `${entry.app}/${entry.sessionId}` !== actor.id) return actor;
  return entry.snapshot === undefined ? actor : { ...actor, snapshot: entry.snapshot };
}

/** "Fork here": a command to the entry's session actor, in the app that reported it. */
export function forkAt(entry) {
  if (!entry.fork) return;
  const name = `session:${entry.fork.sessionId}`;
  const session = [...state.actors.values()].find(
    (actor) => actor.app === entry.app && actor.name === name,
  );
  if (!session) {
    $('command-status').className = 'error';
    $('command-status').textContent = `${name} is no longer known to the inspector`;
    return;
  }
  const as = $('fork-as').value.trim();
  send(session.id, { kind: 'fork', atEvent: entry.fork.index, ...(as ? { as } : {}) });
}

/** Draws the banner: which event is viewed, and whether it can be forked. */
export function renderTravel() {
  const entry = travelEntry();
  const banner = $('travel-banner');
  banner.hidden = !entry;
  if (!entry) return;
  const when = new Date(entry.at).toISOString().slice(11, 23);
  const note = entry.snapshot === undefined ? ' (no snapshot was sent for it: showing live)' : '';
  $('travel-text').textContent = `viewing past event #${entry.seq} ${entry.type} at ${when}${note}`;
  $('travel-fork').hidden = !entry.fork;
  $('fork-as').hidden = !entry.fork;
}

$('travel-live').addEventListener('click', backToLive);
$('travel-fork').addEventListener('click', () => {
  const entry = travelEntry();
  if (entry) forkAt(entry);
});
document.addEventListener('keydown', (key) => {
  if (key.key === 'Escape' && travelEntry()) backToLive();
});
