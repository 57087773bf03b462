"""The paper's write, replacement and promotion rules as pure decisions (policies.placement)."""

from __future__ import annotations

from criss.policies.placement import TierRoom, Unit, plan_promotion, plan_write


def unit(key, size, memory, disk, tier=None, pinned=False, index=0):
    return Unit(key, (index,), size, {"memory": memory, "disk": disk}, tier=tier, pinned=pinned)


def rooms(mem_used, disk_used, mem_cap=100, disk_cap=100):
    return [TierRoom("memory", mem_cap, mem_used), TierRoom("disk", disk_cap, disk_used)]


def test_write_goes_to_memory_then_disk_without_evicting():
    assert plan_write(unit("n", 40, 5, 4), rooms(50, 0), []).tier == "memory"
    resident = unit("r", 60, 1, 1, tier="memory")
    decision = plan_write(unit("n", 50, 5, 4), rooms(60, 0), [resident])
    assert decision.tier == "disk" and decision.steps == ()  # memory full: disk, no replacement


def test_replacement_demotes_memory_victims_to_disk_lowest_density_first():
    cheap = unit("cheap", 30, 1.0, 0.5, tier="memory")
    dear = unit("dear", 30, 50.0, 40.0, tier="memory")
    on_disk = unit("d", 100, 9.0, 8.0, tier="disk")
    decision = plan_write(
        unit("n", 30, 20.0, 10.0), rooms(60, 100, mem_cap=60), [cheap, dear, on_disk]
    )
    assert decision.tier == "memory"
    # memory victim goes to disk; disk is full, and "cheap" at 0.5 cannot displace "d" (8.0)
    assert [(m.unit.key, m.to) for m in decision.steps] == [("cheap", None)]


def test_memory_victim_lands_on_disk_when_disk_has_room():
    cheap = unit("cheap", 30, 1.0, 0.5, tier="memory")
    other = unit("other", 20, 99.0, 99.0, tier="memory", pinned=True)
    # 40 bytes fit neither memory (10 free) nor disk (35 free): evict "cheap" to disk
    decision = plan_write(unit("n", 40, 20.0, 10.0), rooms(50, 65, mem_cap=60), [cheap, other])
    assert decision.tier == "memory" and decision.demoted == [cheap] and decision.evicted == []
    assert decision.steps[0].to == "disk"


def test_nothing_is_evicted_for_a_unit_worth_less_than_the_victims():
    valuable = unit("v", 100, 50.0, 40.0, tier="memory")
    valuable_disk = unit("w", 100, 50.0, 40.0, tier="disk")
    decision = plan_write(unit("n", 50, 5.0, 4.0), rooms(100, 100), [valuable, valuable_disk])
    assert decision.tier is None and decision.steps == ()


def test_many_small_valuable_units_are_not_traded_for_one_big_cheap_one():
    smalls = [unit("s", 10, 3.0, 2.0, tier="disk", index=i) for i in range(10)]
    decision = plan_write(unit("big", 100, 10.0, 8.0), rooms(100, 100, mem_cap=0), smalls)
    assert decision.tier is None  # evicting all ten (20.0 on disk) for 8.0 would be a loss


def test_pinned_units_are_never_victims():
    pinned = unit("p", 100, 0.1, 0.1, tier="disk", pinned=True)
    assert plan_write(unit("n", 50, 9.0, 9.0), rooms(0, 100, mem_cap=0), [pinned]).tier is None


def test_disk_replacement_deletes_victims_and_respects_quota():
    low = unit("low", 60, 1.0, 1.0, tier="disk")
    high = unit("high", 40, 90.0, 90.0, tier="disk")
    decision = plan_write(unit("n", 50, 9.0, 9.0), rooms(0, 100, mem_cap=0), [low, high])
    assert decision.tier == "disk" and decision.evicted == [low]


def test_promotion_into_free_memory_and_by_evicting_lower_benefit():
    hot = unit("hot", 40, 30.0, 20.0, tier="disk")
    assert plan_promotion(hot, rooms(0, 40), [hot]).tier == "memory"
    cold = unit("cold", 80, 2.0, 1.0, tier="memory")
    decision = plan_promotion(hot, rooms(80, 40), [hot, cold])
    assert decision.tier == "memory" and decision.demoted == [cold]
    warm = unit("warm", 80, 60.0, 50.0, tier="memory")
    assert plan_promotion(hot, rooms(80, 40), [hot, warm]).tier is None


def test_pinned_or_memory_units_are_not_promoted():
    assert plan_promotion(unit("m", 10, 5, 4, tier="memory"), rooms(10, 0), []).tier is None
    pinned = unit("p", 10, 5, 4, tier="disk", pinned=True)
    assert plan_promotion(pinned, rooms(0, 10), [pinned]).tier is None
