"""Building and driving a run without pytest.

* ``run.settings``: the run's settings, one frozen value (``Settings``);
* ``run.assembly``: what a run is made of before its first case (the task, the agent with its
  wrappers, batch mode, the spend limit, the gate), built from the settings;
* ``run.process``: one process's part of a run: the agent's warm-up, the calls made ahead, each
  case run to its record, and the stop policy (``run.stop_policy``) applied after it.

The pytest plugin (``groundeval.plugin``) adapts pytest to these: its options become ``Settings``,
its items ask a ``ProcessRun`` for their case, and groundeval's errors become pytest's usage
errors and skips. Nothing in this package imports pytest.
"""
