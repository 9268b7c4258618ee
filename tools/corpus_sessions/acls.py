"""The ACL and SCRAM-credential steps of the corpus sessions (python_clients.py): each admin client creates an ACL,
describes every ACL and deletes what it created. The corpus cluster runs an authorizer that
allows everyone where no ACL exists (capture_corpus.CLUSTER_CONFIG), so the ACL, on a topic no
other step uses, refuses nothing the sessions need."""

from __future__ import annotations

TOPIC = "acl-demo"
WAIT_S = 8


def confluent(admin) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    binding = AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    for f in admin.create_acls([binding]).values():
        f.result(WAIT_S)
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    admin.describe_acls(every).result(WAIT_S)
    mine = AclBindingFilter(ResourceType.TOPIC, TOPIC, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                            AclPermissionType.ANY)
    for f in admin.delete_acls([mine]).values():
        f.result(WAIT_S)


def kafka_python(admin) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    pattern = ResourcePattern(ResourceType.TOPIC, TOPIC, ACLResourcePatternType.LITERAL)
    admin.create_acls([ACL("User:ANONYMOUS", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)])
    every = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                      ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    admin.describe_acls(every)
    mine = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                     ResourcePatternFilter(ResourceType.TOPIC, TOPIC, ACLResourcePatternType.MATCH))
    admin.delete_acls([mine])


def confluent_scram(admin) -> None:
    """KIP-554: create a user's SCRAM credential, describe it, delete it."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion("corpus-user", info, b"pw")]).values():
        f.result(WAIT_S)
    admin.describe_user_scram_credentials().result(WAIT_S)
    deletion = UserScramCredentialDeletion("corpus-user", ScramMechanism.SCRAM_SHA_256)
    for f in admin.alter_user_scram_credentials([deletion]).values():
        f.result(WAIT_S)
