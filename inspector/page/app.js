// The rolebox inspector page. It receives what the server knows (actors with their charts,
// snapshots, events) over /ui, draws the selected actor's statechart, highlights its active
// states as snapshots arrive, and sends commands back to rolebox actors.
// Plain JavaScript modules served as they are: no build step, nothing from the internet.
// One concern per module: state.js (what the page holds), connection.js (the socket),
// tree.js, chart.js, context.js, effects.js, approvals.js, controls.js, log.js (the panels).
import { renderApprovals } from './approvals.js';
import { showChart } from './chart.js';
import { connect } from './connection.js';
import { renderContext } from './context.js';
import { renderControls } from './controls.js';
import { renderEffects } from './effects.js';
import './replay.js';
import { renderPipeline } from './pipeline.js';
import { $, describeValue, onRender, state } from './state.js';
import { renderTravel, viewedActor } from './time-travel.js';
import { renderTree } from './tree.js';

/** The chart, context and controls of the selected actor. */
function renderSelected() {
  // While travelling: the selected actor as it was after the event viewed.
  const actor = viewedActor(state.actors.get(state.selected));
  if (!actor) return;
  $('chart-title').textContent =
    `${actor.name}  ·  ${describeValue(actor.snapshot?.value) || actor.snapshot?.status || ''}`;
  showChart(actor);
  renderContext(actor.snapshot?.context);
  renderEffects(actor.snapshot?.context);
  renderApprovals(actor);
  renderControls(actor);
}

onRender(renderTree);
onRender(renderSelected);
onRender(renderTravel);
onRender(renderPipeline);
connect();
