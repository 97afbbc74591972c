"""The scaling kind: add background instances step by step and re-measure the worker at each step."""

from labtui.suites.kind import Kind

KIND = Kind(
    name="scaling",
    description="add background instances step by step and re-measure the worker",
    run="labtui.engine.scaling:run_scaling",
    plan="labtui.engine.scaling:plan_steps",
    shares=("scale", "background"),
    needs=("scale", "background"),
    serves_load=True,
)
