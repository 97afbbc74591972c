"""The fairshare kind: CPU share achieved against share requested (study 004, section 5.1 and Table 3)."""

from __future__ import annotations

from dataclasses import dataclass

from labtui.suites.key_types import PROGRAM_KEYS, Key, integer, is_cpu_list, is_number, number, text
from labtui.suites.kind import Kind, KindCheck
from labtui.suites.model import Suite
from labtui.suites.probes import check_probe

#: How a fairshare run reserves a share for one instance, and how it measures what each received.
FAIRSHARE_METHODS = ("weight", "cap")
FAIRSHARE_MEASURES = ("output", "cpu_time")
#: Everyone's CPU weight on the InstanceSpec.cpu_weight scale (cgroup v2's cpu.weight).
DEFAULT_CPU_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class Fairshare:
    """A fairshare run: CPU share achieved against requested (VServer/Xen paper, 5.1 and Table 3).

    ``instances`` CPU-bound instances run at once on the CPU set ``cpus`` (None:
    every CPU of the host) for ``duration_s``: first with equal shares, then once
    per method with the first instance reserved ``reserved_share`` of the set.
    ``measure = "output"`` reads the share each probe reports (Hourglass);
    ``"cpu_time"`` reads each instance's CPU time from the backend's listing.
    """

    instances: int = 8
    reserved_share: float = 0.25
    methods: tuple[str, ...] = FAIRSHARE_METHODS
    duration_s: float = 60.0
    cpus: str | None = None
    measure: str = "output"
    #: What the instances run (None: ``hourglass`` for "output", ``attack-cpu`` for "cpu_time").
    program: str | None = None
    image: str | None = None
    #: Seconds between creating the instances and their common start (or the measured window).
    start_delay_s: float = 1.0

    def configurations(self) -> tuple[str, ...]:
        """A repetition's configurations in order: "equal", then each method."""
        return ("equal", *self.methods)

    def probe(self) -> str | None:
        """The probe the instances run (None when they run an image)."""
        if self.image is not None:
            return None
        return self.program or ("hourglass" if self.measure == "output" else "attack-cpu")

    def requested(self, configuration: str) -> tuple[float, float]:
        """Share of the CPU set requested for the reserved instance and for each of the others."""
        if configuration == "equal":
            return 1 / self.instances, 1 / self.instances
        return self.reserved_share, (1 - self.reserved_share) / (self.instances - 1)

    def weights(self) -> tuple[int, int]:
        """CPU weights (reserved, each other) that make the reserved one's weight its share of all weights."""
        reserved, other = self.requested("weight")
        return round(DEFAULT_CPU_WEIGHT * reserved / other), DEFAULT_CPU_WEIGHT

    def caps(self, cpus: int) -> tuple[float, float]:
        """CPU caps (reserved, each other) in CPUs that split a set of ``cpus`` CPUs as requested."""
        reserved, other = self.requested("cap")
        return reserved * cpus, other * cpus


KEYS = {
    "instances": integer(2, 8),
    "reserved_share": Key("a number between 0 and 1 (exclusive)", lambda v: is_number(v) and 0 < v < 1, float, 0.25),
    "methods": Key(
        "a list of distinct methods from: " + ", ".join(FAIRSHARE_METHODS),
        lambda v: isinstance(v, list) and len(set(map(str, v))) == len(v) and all(m in FAIRSHARE_METHODS for m in v),
        tuple,
        FAIRSHARE_METHODS,
    ),
    "duration_s": number(0.5, 86400.0, 60.0),
    "cpus": text('a CPU list such as "0", "0-3" or "0,2-3"', is_cpu_list, None),
    "measure": Key("one of: " + ", ".join(FAIRSHARE_MEASURES), lambda v: v in FAIRSHARE_MEASURES, default="output"),
    "program": PROGRAM_KEYS["program"],
    "image": PROGRAM_KEYS["image"],
    "start_delay_s": number(0.1, 60.0, 1.0),
}


def _check(check: KindCheck) -> None:
    """The [fairshare] table, checked so that every weight and cap it implies can be set."""
    fair: Fairshare = check.settings["fairshare"]
    src = check.src
    if "worker" in check.raw:
        raise src.error(("worker",), "a fairshare suite runs its own probe: name it with fairshare.program "
                                     "(or fairshare.image), not a [worker] table")
    if fair.program is not None and fair.image is not None:
        raise src.error(("fairshare",), "give at most one of program (a probe name) or image")
    check_probe(fair.program, ("fairshare", "program"), src)
    reserved_weight = fair.weights()[0]
    if "weight" in fair.methods and not 1 <= reserved_weight <= 10000:
        raise src.error(("fairshare", "reserved_share"),
                        f"the weight method would give the reserved instance a CPU weight of {reserved_weight} "
                        f"against {fair.weights()[1]} for the others; weights go from 1 to 10000")
    reserved_cap, other_cap = fair.caps(1)
    if "cap" in fair.methods and min(reserved_cap, other_cap) < 0.01:
        key = "reserved_share" if reserved_cap < 0.01 else "instances"
        raise src.error(("fairshare", key), f"the cap method would cap an instance at {min(reserved_cap, other_cap):.4f} "
                                            "of a CPU; the smallest cap is 0.01")
    needed = fair.start_delay_s + fair.duration_s + 10
    if fair.measure == "output" and check.head["operation_timeout_s"] < needed:
        raise src.error(("fairshare", "duration_s"), f"instances that run {fair.duration_s:g} s after a "
                        f"{fair.start_delay_s:g} s delay need suite.operation_timeout_s of at least {needed:g}")


def _steps(suite: Suite) -> int:
    return len(suite.table(Fairshare).configurations())


def _most_instances(suite: Suite) -> int:
    return suite.table(Fairshare).instances


KIND = Kind(
    name="fairshare",
    description="CPU share achieved against share requested",
    run="labtui.engine.fairshare:run_fairshare",
    plan="labtui.engine.fairshare:plan_steps",
    tables={"fairshare": (Fairshare, KEYS)},
    measures_itself=True,
    check=_check,
    steps=_steps,
    most_instances=_most_instances,
    backend_check="labtui.engine.fairshare:check_fairshare",
    charts="labtui.report.fairshare:share_charts",
    summary="labtui.report.fairshare:render_fairshare",
)
