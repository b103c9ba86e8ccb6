// Browsing stored sessions and replaying recorded runs (`rolebox inspect --store`,
// `rolebox replay --inspect`): the server shows them as read-only pseudo-apps. This module
// says "stored, read-only" for a stored actor, and for a replay shows the position
// ("event k of n"), step/back/play controls (the server holds the steps: the page asks for
// one with {type:'replay', action:'seek'|'step'}), and the first divergence: a red banner
// naming the event with the expected and actual states, the actual state marked on the chart.
import { onServerMessage } from './connection.js';
import { $, onRender, queueRender, state } from './state.js';
import { select } from './tree.js';

/** How long play shows each step. */
const PLAY_STEP_MS = 700;

/** The latest replay position the server sent, or null when no run is replayed. */
let replay = null;
let playTimer = null;

const sendReplay = (frame) => state.socket?.send(JSON.stringify({ type: 'replay', ...frame }));

function pause() {
  if (playTimer !== null) clearInterval(playTimer);
  playTimer = null;
  $('replay-play').textContent = '▶ play';
}

function play() {
  if (!replay) return;
  if (replay.position >= replay.total) sendReplay({ action: 'seek', to: 0 });
  $('replay-play').textContent = '⏸ pause';
  playTimer = setInterval(() => {
    if (!replay || replay.position >= replay.total) return pause();
    sendReplay({ action: 'step', by: 1 });
  }, PLAY_STEP_MS);
}

/** The server id of a replayed actor by its systemId. */
const replayedId = (systemId) => `${replay.app}/${systemId}`;

onServerMessage((message) => {
  if (message.type !== 'replay') return;
  replay = message;
  const { position, total, event, divergence } = message;
  $('replay').hidden = false;
  $('replay-slider').max = String(total);
  $('replay-slider').value = String(position);
  $('replay').dataset.position = String(position);
  $('replay-position').textContent = `event ${position} of ${total}${
    event ? ` · ${event.type} → ${event.target}` : ' · before the first event'
  }`;
  $('replay-to-divergence').hidden = !divergence;
  const banner = $('replay-divergence');
  banner.hidden = !message.atDivergence;
  if (message.atDivergence) {
    banner.replaceChildren(...divergenceBanner(divergence));
    // The diverging actor is what there is to look at.
    if (state.actors.has(replayedId(divergence.actor))) select(replayedId(divergence.actor));
  } else if (!state.actors.has(state.selected)) {
    // Nothing shown, or the shown actor does not exist at this step: show the event's target.
    const target = replayedId(event?.target ?? 'rolebox');
    if (state.actors.has(target)) select(target);
  }
  if (position >= total) pause();
  markReplayRows();
  queueRender();
});

/**
 * A difference line as `replay()` wrote it, from the innermost snapshot on (the diverging
 * actor's): `children.session:a.snapshot.children.fn:f.snapshot.value: …` → `value: …`.
 */
function ownPath(line) {
  const own = '.snapshot.';
  const at = line.lastIndexOf(own, line.indexOf(': '));
  return at < 0 ? line : line.slice(at + own.length);
}

/**
 * The divergence as the banner says it: where (the event, as "event k" the way the CLI
 * and the position count), the recorded and the replayed state, and what differs.
 */
function divergenceBanner(divergence) {
  const title = document.createElement('strong');
  title.textContent = `Diverged at event ${divergence.step} (${divergence.event} → ${divergence.target}) in ${divergence.actor}`;
  const states = document.createElement('div');
  const expected = divergence.expected.at(-1);
  const actual = divergence.actual.at(-1);
  const paths = divergence.diff.map((line) => ownPath(line).split(': ')[0]);
  states.textContent =
    expected === actual
      ? `same state in both (${expected ?? 'none'}); they differ in ${paths.join(', ') || 'nothing listed'}:`
      : `expected state: ${expected ?? '(none)'} · actual state: ${actual ?? '(none)'}`;
  const list = document.createElement('ul');
  for (const line of divergence.diff) {
    const item = document.createElement('li');
    item.textContent = ownPath(line);
    item.title = line;
    list.append(item);
  }
  return [title, states, list];
}

/**
 * The event log's rows of the replayed run: the one at the position marked as viewed, those
 * after it dimmed (not replayed yet), the diverging one in red.
 */
function markReplayRows() {
  if (!replay?.seqs) return;
  const indexOf = new Map(replay.seqs.map((seq, index) => [seq, index]));
  for (const row of $('log').tBodies[0].querySelectorAll('tr.event-row')) {
    const index = indexOf.get(Number(row.dataset.seq));
    if (index === undefined || row.dataset.app !== String(replay.app)) continue;
    row.classList.toggle('viewing', index === replay.position - 1);
    row.classList.toggle('replay-ahead', index >= replay.position);
    row.classList.toggle('diverged', index === replay.divergence?.index);
    row.title = 'replay up to this event';
  }
}
onRender(markReplayRows);

// A click on a replayed event's row (log.js) replays up to it.
document.addEventListener('replay-row', (event) => {
  const index = replay?.seqs?.indexOf(event.detail) ?? -1;
  if (index < 0) return;
  pause();
  sendReplay({ action: 'seek', to: index + 1 });
});

/** Marks the diverging actor's actual (and recorded) states on its chart, when shown. */
function markDivergence() {
  const marked = document.querySelectorAll('#chart .diverged-actual, #chart .diverged-expected');
  for (const node of marked) node.classList.remove('diverged-actual', 'diverged-expected');
  if (!replay?.atDivergence || state.selected !== replayedId(replay.divergence.actor)) return;
  const mark = (ids, name) => {
    for (const id of ids)
      document
        .querySelector(`#chart .state-node[data-state-id="${CSS.escape(id)}"]`)
        ?.classList.add(name);
  };
  const { expected, actual } = replay.divergence;
  mark(
    expected.filter((id) => !actual.includes(id)),
    'diverged-expected',
  );
  mark(actual, 'diverged-actual');
}

/** The note over the chart for an actor that comes from a store (or a replay). */
function renderSourceNote() {
  const actor = state.actors.get(state.selected);
  const source = actor ? state.apps.get(actor.app)?.source : undefined;
  const note = $('source-note');
  note.hidden = !source;
  if (!source) return;
  const unreadable = actor.snapshot?.status === 'unreadable';
  note.className = unreadable ? 'unreadable' : '';
  note.textContent =
    source === 'store'
      ? unreadable
        ? `stored, read-only · unreadable: ${actor.snapshot.error}`
        : 'stored, read-only'
      : 'replayed, read-only';
  // The same session live in a running app: that one takes commands.
  const live =
    source === 'store'
      ? [...state.actors.values()].find(
          (other) =>
            other.name === actor.name &&
            !state.apps.get(other.app)?.source &&
            state.apps.get(other.app)?.connected,
        )
      : undefined;
  if (live) {
    const link = document.createElement('button');
    link.type = 'button';
    link.id = 'open-live';
    link.textContent = `live in app ${live.app}: open it`;
    link.addEventListener('click', () => select(live.id));
    note.append(' · ', link);
  }
  markDivergence();
}

onRender(renderSourceNote);
// The chart is laid out asynchronously: mark it again whenever it is redrawn.
new MutationObserver(markDivergence).observe($('chart'), { childList: true });

$('replay-first').addEventListener('click', () => sendReplay({ action: 'seek', to: 0 }));
$('replay-back').addEventListener('click', () => {
  pause();
  sendReplay({ action: 'step', by: -1 });
});
$('replay-step').addEventListener('click', () => {
  pause();
  sendReplay({ action: 'step', by: 1 });
});
$('replay-play').addEventListener('click', () => (playTimer === null ? play() : pause()));
$('replay-slider').addEventListener('input', (event) =>
  sendReplay({ action: 'seek', to: Number(event.target.value) }),
);
$('replay-to-divergence').addEventListener('click', () => {
  pause();
  if (replay?.divergence) sendReplay({ action: 'seek', to: replay.divergence.step });
});
document.addEventListener('keydown', (event) => {
  if (!replay || event.target.closest?.('input, textarea, select')) return;
  if (event.key === 'ArrowRight') sendReplay({ action: 'step', by: 1 });
  else if (event.key === 'ArrowLeft') sendReplay({ action: 'step', by: -1 });
  else if (event.key === ' ') playTimer === null ? play() : pause();
  else return;
  event.preventDefault();
});
