// Commands to rolebox actors: signal buttons, a user message, a runtime event.
import { $, describeValue, isFinished, isGone, state } from './state.js';

let requestSeq = 0;

/** The controls for the selected actor: none for a finished one (it would refuse them all). */
export function renderControls(actor) {
  const name = actor.name ?? '';
  // Only a rolebox app takes commands, and only while it is connected.
  const rolebox = /^(session|fn|loop):/.test(name) && state.apps.get(actor.app)?.rolebox === true;
  $('controls').hidden = !rolebox || isGone(actor);
  if ($('controls').hidden) return;
  const finished = isFinished(actor);
  $('command-inputs').hidden = finished;
  $('controls-note').hidden = !finished;
  if (finished) {
    const state = describeValue(actor.snapshot?.value);
    $('controls-note').textContent =
      `${name} has finished${state ? ` (${state})` : ''}: it takes no commands`;
    return;
  }
  const buttons = $('signal-buttons');
  if (buttons.dataset.for === actor.id) return;
  buttons.dataset.for = actor.id;
  const make = (label, command) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.send = label;
    button.textContent = label;
    button.addEventListener('click', () => send(actor.id, command));
    return button;
  };
  const list = [
    ...state.catalogue.signals.map((type) => make(type, { kind: 'signal', type })),
    make('idle', { kind: 'idle' }),
  ];
  if (name.startsWith('loop:')) list.push(make('stop loop', { kind: 'stop_loop' }));
  buttons.replaceChildren(...list);
  const select = $('runtime-type');
  if (select.options.length === 0)
    select.append(...state.catalogue.runtimeEvents.map((type) => new Option(type, type)));
}

export function send(actor, command) {
  const requestId = `r${++requestSeq}`;
  $('command-status').className = '';
  $('command-status').textContent = 'sending…';
  state.socket?.send(JSON.stringify({ type: 'command', requestId, actor, command }));
}

$('send-message').addEventListener('click', () => {
  const actor = state.actors.get(state.selected);
  if (!actor) return;
  const text = $('message-text').value;
  // An empty message would reach the agent as a turn with nothing said: refused here.
  if (text.trim() === '') {
    $('command-status').className = 'error';
    $('command-status').textContent = 'type a message first: an empty one is not sent';
    return;
  }
  send(actor.id, { kind: 'message', text });
});

$('send-runtime').addEventListener('click', () => {
  const actor = state.actors.get(state.selected);
  if (!actor) return;
  let payload = {};
  try {
    payload = $('runtime-payload').value.trim() ? JSON.parse($('runtime-payload').value) : {};
  } catch (error) {
    $('command-status').className = 'error';
    $('command-status').textContent = `payload is not JSON: ${error.message}`;
    return;
  }
  send(actor.id, { kind: 'runtime', event: { type: $('runtime-type').value, ...payload } });
});
