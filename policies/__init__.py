"""Benefit models and caching decisions: plain numbers in, decisions out.

>>> from criss.policies import get_policy
>>> get_policy("criss").benefit(ref=2, texec=10.0, size_bytes=100e6, bandwidth=200e6, recency=5.0)
92.5
"""

from criss.policies.benefit import BenefitModel, CrissBenefit, LruBenefit, RecyclerBenefit
from criss.policies.registry import available_policies, get_policy, register_policy

__all__ = [
    "BenefitModel",
    "CrissBenefit",
    "LruBenefit",
    "RecyclerBenefit",
    "available_policies",
    "get_policy",
    "register_policy",
]
