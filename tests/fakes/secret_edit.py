"""A hand edit of a Secrets Manager secret (the console's "edit secret value") that moto tracks correctly.

Secrets Manager answers an unstaged GetSecretValue with AWSCURRENT; moto answers with the last version it
made current through PutSecretValue, and forgets stage moves. Putting the edit as AWSPENDING and moving
AWSCURRENT to it gives the same stages as the real edit (new: AWSCURRENT, old: AWSPREVIOUS) in both.
"""

from __future__ import annotations

import uuid
from typing import Any


def hand_edit(client: Any, secret_id: str, text: str) -> None:
    current = client.get_secret_value(SecretId=secret_id, VersionStage="AWSCURRENT")["VersionId"]
    version = str(uuid.uuid4())
    client.put_secret_value(
        SecretId=secret_id, SecretString=text, ClientRequestToken=version, VersionStages=["AWSPENDING"]
    )
    client.update_secret_version_stage(
        SecretId=secret_id, VersionStage="AWSCURRENT", MoveToVersionId=version, RemoveFromVersionId=current
    )
    client.update_secret_version_stage(
        SecretId=secret_id, VersionStage="AWSPENDING", RemoveFromVersionId=version
    )
