"""The ``Faithfulness`` and ``Failover`` families: what a user met first — an admin
client cut off by a request Kafka accepts, and a consumer that could not outlive the broker it
reached first."""

from __future__ import annotations

from conformance import contracts as C
from conformance.model import Operation, Scenario
from conformance.scenario_defaults import DELIVERY_TIMEOUT, PRODUCE, REQUEST_TIMEOUT

FAILOVER_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="faithful.admin-list-all-topics",
        family="Faithfulness",
        title="The admin client lists every topic and keeps its connection",
        teaching=("Listing every topic is a Metadata request with a null topic list. Whatever a released client "
                  "sends for it, Apache Kafka's broker reads the fields its schema names and ignores what follows "
                  "(RequestContext.parseRequest), so an emulator must accept it too: the list comes back and the "
                  "broker closes nothing. (librdkafka 2.16's admin client sends 3 stray bytes after the body.)"),
        references=("Kafka RequestContext.parseRequest", "docs/findings.md"),
        steps=(Operation("admin_list_topics", {}, timeout_s=10.0),),
        needs_faults=False,
        client_config={"request.timeout.ms": REQUEST_TIMEOUT},
        contracts=(C.outcome_is("admin_list_topics", ok=True), C.value_includes("admin_list_topics", "t"),
                   C.no_broker_close()),
    ),
    Scenario(
        id="failover.bootstrap-broker-dies-producer",
        family="Failover",
        title="The bootstrap broker, also the leader, dies as the Produce arrives: the retry goes to the new leader",
        teaching=("The client was given one address, broker 0's, and broker 0 leads the partition. It crashes on "
                  "receipt of the Produce. The client learnt the other brokers from its first Metadata answer: it "
                  "must see the dead connection, ask a surviving broker for Metadata (not its dead bootstrap "
                  "address) and send the batch to the new leader, long before any timeout."),
        references=("KIP-19", "Java NetworkClient.leastLoadedNode"),
        steps=(PRODUCE,),
        bootstrap_brokers=(0,),
        faults=({"move_leader": {"topic": "t", "partition": 0, "broker": 0}, "at_ms": 0},
                {"match": {"api": "Produce", "broker": 0}, "action": {"type": "stop_broker", "ms": 0}, "times": 1}),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "delivery.timeout.ms": DELIVERY_TIMEOUT, "acks": "all"},
        contracts=(C.outcome_is("produce", ok=True), C.resumes_on_survivor("Produce", "request.timeout.ms"),
                   C.retry_on_new_leader("Produce")),
    ),
    Scenario(
        id="failover.leader-stops-during-long-poll",
        family="Failover",
        title="The leader of the assigned partition (the bootstrap broker) stops during a long poll: fetching resumes "
              "on the new leader",
        teaching=("The consumer's Fetch waits on broker 0 for fetch.max.wait.ms when broker 0 stops. The connection "
                  "drops at once; a correct consumer refreshes metadata from a surviving broker (its only bootstrap "
                  "address is the dead one) and fetches from the new leader within one request timeout. poll() "
                  "itself returns at its deadline, without an error."),
        references=("KIP-19", "KIP-266"),
        # the poll outlasts the stop by more than a request timeout, so the contract can wait for it
        steps=(Operation("poll", {"topic": "t", "partition": 0, "offset": "earliest"}, timeout_s=90.0),),
        bootstrap_brokers=(0,),
        faults=({"move_leader": {"topic": "t", "partition": 0, "broker": 0}, "at_ms": 0},
                {"match": {"api": "Fetch", "broker": 0}, "action": {"type": "stop_broker", "ms": 250}, "after": 1,
                 "times": 1}),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT, "fetch.max.wait.ms": 500},
        contracts=(C.outcome_is("poll", ok=True), C.returns_within("poll", "timeout", early_ms=20, late_fraction=0.25),
                   C.resumes_on_survivor("Fetch", "request.timeout.ms")),
    ),
    Scenario(
        id="failover.bootstrap-broker-dies-metadata",
        family="Failover",
        title="The bootstrap broker dies between two topic listings of one client: a survivor answers the second",
        teaching=("A metadata call (an admin listing, a consumer's list_topics) may go to any broker. After the only "
                  "bootstrap broker dies, the client still knows the others from its first answer and must ask one "
                  "of them, not keep knocking on the dead one until its deadline."),
        references=("KIP-19", "Java NetworkClient.leastLoadedNode"),
        steps=(Operation("admin_list_topics", {"repeat": 2, "pause_s": 12.0}, timeout_s=10.0),),
        bootstrap_brokers=(0,),
        faults=({"match": {"api": "Metadata", "broker": 0}, "action": {"type": "stop_broker", "ms": 6000}, "times": 1},),
        client_config={"request.timeout.ms": REQUEST_TIMEOUT},
        contracts=(C.outcome_is("admin_list_topics", ok=True), C.value_includes("admin_list_topics", "t"),
                   C.returns_within("admin_list_topics", 0, late_ms=REQUEST_TIMEOUT / 3),
                   C.resumes_on_survivor("Metadata", "request.timeout.ms")),
    ),
)
