"""The former home of the provider frame; its names now live in ``models.policy`` and ``models.providers``.

``ProviderModel`` is ``models.policy.PolicyModel`` (the one policy of a call, composed over a
provider); ``Reply`` and ``check_temperature`` are ``models.providers.base``'s. Kept so that code
importing them from here goes on working.
"""

from __future__ import annotations

from groundeval.models.policy import PolicyModel
from groundeval.models.providers.base import Reply, check_temperature

__all__ = ["ProviderModel", "Reply", "check_temperature"]

ProviderModel = PolicyModel
"""The model every provider's calls go through: ``models.policy.PolicyModel``."""
