"""Names vulture must not report (``make lint`` runs vulture with this file).

Only what no Python code in the repository calls but something else does: a framework, a library,
a serializer, the command-line table, or a reader of the documented API. Anything used only by tests is
dead code and goes, unless it is a test helper (then it lives in the ``testing.py``
module of its package or under ``tests/``, which vulture does not scan).
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# attributes of kubernetes_asyncio objects, read by that library
_.api_key  # unused attribute (services/kubesim/ksched_kubesim/bench.py:167)
_.connection_pool_maxsize  # unused attribute (shared/ksched/bench/client.py: call_api's pool size)

# asyncio.Protocol callbacks, called by the event loop's transport
_.connection_made  # unused method (shared/ksched/client/http1.py:122)
_.data_received  # unused method (shared/ksched/client/http1.py:133)
_.connection_lost  # unused method (shared/ksched/client/http1.py:176)

# http.server's request handler, called by the server
_.do_POST  # unused method (shared/ksched/differential/extender.py: the harness's extenders)
_.log_message  # unused method (shared/ksched/differential/extender.py: silenced)
_.handle_error  # unused method (shared/ksched/differential/extender.py: the server's, silenced)
_.client_address  # unused variable (shared/ksched/differential/extender.py: handle_error's argument)

# prometheus_client custom collectors: the registry calls collect()
_.collect  # unused method (services/kubesim/ksched_kubesim/metrics.py:40)
_.collect  # unused method (services/queue/ksched_queue/metrics.py:108)
_.collect  # unused method (shared/ksched/metrics/framework_metrics.py:74)
_.collect  # unused method (shared/ksched/metrics/plugin_metrics.py:96)

# kubesim's in-process Python API, documented in docs/kubesim.md
_.create_all  # unused method (services/kubesim/ksched_kubesim/sim.py:233)
_.load_yaml  # unused method (services/kubesim/ksched_kubesim/sim.py:256)
_.list_objects  # unused method (services/kubesim/ksched_kubesim/sim.py:274)

# upstream's Pool.InvalidReason: upstream only logs it (the pools at verbosity 6)
invalid_reason  # unused variable (shared/ksched/plugins/dynamicresources/pools.py)

# msgspec fields: the wire format of API objects, bus messages and the configuration (decoded and encoded, not all read)
int_values  # unused variable (shared/ksched/api/resource.py): list attributes, refused without DRAListTypeAttributes
bool_values  # unused variable (shared/ksched/api/resource.py)
string_values  # unused variable (shared/ksched/api/resource.py)
version_values  # unused variable (shared/ksched/api/resource.py)
request_mappings  # unused variable (shared/ksched/api/core.py): PreBind writes them, the kubelet reads them
reporting_instance  # unused variable (shared/ksched/api/core.py): an Event field
holder_identity  # unused variable (shared/ksched/api/coordination.py:12)
lease_transitions  # unused variable (shared/ksched/api/coordination.py:16)
mismatch_label_keys  # unused variable (shared/ksched/api/core.py:48)
toleration_seconds  # unused variable (shared/ksched/api/core.py:72)
time_added  # unused variable (shared/ksched/api/core.py:79)
container_port  # unused variable (shared/ksched/api/core.py:108)
exit_codes  # unused variable (shared/ksched/api/core.py:122)
volume_claim_template  # unused variable (shared/ksched/api/core.py:149)
target_portal  # unused variable (shared/ksched/api/core.py:174)
lun  # unused variable (shared/ksched/api/core.py:176)
volume_attributes  # unused variable (shared/ksched/api/core.py:183)
pull_policy  # unused variable (shared/ksched/api/core.py:188)
host_path  # unused variable (shared/ksched/api/core.py:206)
config_map  # unused variable (shared/ksched/api/core.py:208)
secret  # unused variable (shared/ksched/api/core.py:209)
projected  # unused variable (shared/ksched/api/core.py:210)
resource_claim_name  # unused variable (shared/ksched/api/core.py:222)
resource_claim_template_name  # unused variable (shared/ksched/api/core.py:223)
priority_class_name  # unused variable (shared/ksched/api/core.py:237)
termination_grace_period_seconds  # unused variable (shared/ksched/api/core.py:245)
service_account_name  # unused variable (shared/ksched/api/core.py:247)
restart_count  # unused variable (shared/ksched/api/core.py:257)
container_statuses  # unused variable (shared/ksched/api/core.py:271)
pod_cidr  # unused variable (shared/ksched/api/core.py:293)
provider_id  # unused variable (shared/ksched/api/core.py:294)
volume_attributes  # unused variable (shared/ksched/api/core.py:357)
persistent_volume_reclaim_policy  # unused variable (shared/ksched/api/core.py:366)
mount_options  # unused variable (shared/ksched/api/core.py:368)
local  # unused variable (shared/ksched/api/core.py:370)
host_path  # unused variable (shared/ksched/api/core.py:371)
api_group  # unused variable (shared/ksched/api/core.py:395)
data_source  # unused variable (shared/ksched/api/core.py:405)
cluster_ip  # unused variable (shared/ksched/api/core.py:428)
component  # unused variable (shared/ksched/api/core.py:454)
last_observed_time  # unused variable (shared/ksched/api/core.py:460)
involved_object  # unused variable (shared/ksched/api/core.py:469)
first_timestamp  # unused variable (shared/ksched/api/core.py:474)
last_timestamp  # unused variable (shared/ksched/api/core.py:475)
event_time  # unused variable (shared/ksched/api/core.py:476)
reporting_component  # unused variable (shared/ksched/api/core.py:480)
block_owner_deletion  # unused variable (shared/ksched/api/meta.py:16)
generate_name  # unused variable (shared/ksched/api/meta.py:21)
deletion_grace_period_seconds  # unused variable (shared/ksched/api/meta.py:28)
remaining_item_count  # unused variable (shared/ksched/api/meta.py:38)
field_path  # unused variable (shared/ksched/api/meta.py:59)
last_transition_time  # unused variable (shared/ksched/api/meta.py:69)
last_probe_time  # unused variable (shared/ksched/api/meta.py:70)
last_heartbeat_time  # unused variable (shared/ksched/api/meta.py:71)
observed_generation  # unused variable (shared/ksched/api/meta.py:72)
min_available  # unused variable (shared/ksched/api/policy.py:12)
max_unavailable  # unused variable (shared/ksched/api/policy.py:13)
unhealthy_pod_eviction_policy  # unused variable (shared/ksched/api/policy.py:15)
current_healthy  # unused variable (shared/ksched/api/policy.py:20)
desired_healthy  # unused variable (shared/ksched/api/policy.py:21)
expected_pods  # unused variable (shared/ksched/api/policy.py:22)
observed_generation  # unused variable (shared/ksched/api/policy.py:23)
global_default  # unused variable (shared/ksched/api/policy.py:41)
pod_fixed  # unused variable (shared/ksched/api/policy.py:47)
parameters  # unused variable (shared/ksched/api/storage.py:25)
reclaim_policy  # unused variable (shared/ksched/api/storage.py:26)
allow_volume_expansion  # unused variable (shared/ksched/api/storage.py:29)
node_id  # unused variable (shared/ksched/api/storage.py:38)
topology_keys  # unused variable (shared/ksched/api/storage.py:39)
attach_required  # unused variable (shared/ksched/api/storage.py:55)
pod_info_on_mount  # unused variable (shared/ksched/api/storage.py:56)
volume_lifecycle_modes  # unused variable (shared/ksched/api/storage.py:58)
queued_at  # unused variable (shared/ksched/bus/messages.py:137)
requester  # unused variable (shared/ksched/bus/messages.py:211)
sender  # unused variable (shared/ksched/bus/messages.py:303)
STALE_POD  # unused variable (shared/ksched/bus/messages.py:359)
sender  # unused variable (shared/ksched/bus/messages.py:397)
placement_generate  # unused variable (shared/ksched/config/types.py:57)
placement_score  # unused variable (shared/ksched/config/types.py:58)
accept_content_types  # unused variable (shared/ksched/config/types.py:129)
delay_cache_until_active  # unused variable (shared/ksched/config/types.py:151)
min_resources  # unused variable (shared/ksched/api/coscheduling.py:22)
schedule_timeout_seconds  # unused variable (shared/ksched/api/coscheduling.py:23)
basic  # unused variable (shared/ksched/api/scheduling.py:35)
workload_name  # unused variable (shared/ksched/api/scheduling.py:48)
pod_group_template_name  # unused variable (shared/ksched/api/scheduling.py:49)
pod_group_template_ref  # unused variable (shared/ksched/api/scheduling.py:57)
scheduling_constraints  # unused variable (shared/ksched/api/scheduling.py:59)
disruption_mode  # unused variable (shared/ksched/api/scheduling.py:60)
controller_ref  # unused variable (shared/ksched/api/scheduling.py:99)
pod_group_templates  # unused variable (shared/ksched/api/scheduling.py:100)

# dataclass fields serialized with asdict() (benchmark output)
p50_ms  # unused variable (shared/ksched/bench/cycle.py:28)
p99_ms  # unused variable (shared/ksched/bench/cycle.py:29)
double_bound_examples  # unused variable (shared/ksched/bench/chaos.py:76), in the chaos JSON report
violated_examples  # unused variable (shared/ksched/bench/chaos.py), in the chaos JSON report
devices_per_node  # unused variable (shared/ksched/bench/dra.py:39)
measured_pods  # unused variable (shared/ksched/bench/dra.py:41)
cpu_seconds  # unused variable (shared/ksched/bench/dra.py)
pods_per_cpu_second  # unused variable (shared/ksched/bench/dra.py)

# registered with atexit
_kill_leftovers  # unused function (shared/ksched/bus/embedded.py:289)

# documented in docs/bus.md for readers of PubAck
is_duplicate  # unused function (shared/ksched/bus/jetstream.py:176)

# enum members looked up by value (SubjectKind(...)), and the other value of a two-valued mode
_.NOOP  # NominatingMode (upstream ModeNoop): PostFilter results compare their mode with OVERRIDE
SNAPSHOT_DELTA  # unused variable (shared/ksched/bus/subjects.py:26)
SNAPSHOT_BOOTSTRAP  # unused variable (shared/ksched/bus/subjects.py:27)
PENDING_POD  # unused variable (shared/ksched/bus/subjects.py:28)
CLUSTER_EVENT  # unused variable (shared/ksched/bus/subjects.py:29)
PENDING_BOOTSTRAP  # unused variable (shared/ksched/bus/subjects.py:30)
ASSUME  # unused variable (shared/ksched/bus/subjects.py:31)
ASSUME_BATCH  # unused variable (shared/ksched/bus/subjects.py:32)
FORGET  # unused variable (shared/ksched/bus/subjects.py:32)
POP  # unused variable (shared/ksched/bus/subjects.py:33)
DONE  # unused variable (shared/ksched/bus/subjects.py:35)
DONE_BATCH  # unused variable (shared/ksched/bus/subjects.py:36)
RENEW  # unused variable (shared/ksched/bus/subjects.py:35)
REQUEUE  # unused variable (shared/ksched/bus/subjects.py:36)
PLACEMENT  # unused variable (shared/ksched/bus/subjects.py:37)
PERMIT  # unused variable (shared/ksched/bus/subjects.py:38)
TRACE  # unused variable (shared/ksched/bus/subjects.py:40)
HEALTH  # unused variable (shared/ksched/bus/subjects.py:41)
ASSUME_GROUP  # unused variable (shared/ksched/bus/subjects.py:32)

# observation points that tests read as positive signals (a test helper's role)
_.bootstraps  # unused attribute (shared/ksched/cache/follower.py:41)
_.bootstraps  # unused attribute (shared/ksched/cache/follower.py:75)
_.assumed_keys  # unused method (shared/ksched/plugins/volumebinding/assume_cache.py:98)
_.published  # unused attribute (shared/ksched/tracing/tracer.py:85)
_.buffered  # unused property (shared/ksched/tracing/tracer.py:93)
_.published  # unused attribute (shared/ksched/tracing/tracer.py:165)

# API for plugin authors, documented in docs/config.md
list_plugins  # unused function (shared/ksched/config/profile.py:385)
register_validator  # unused function (shared/ksched/plugins/args/validation.py)

# a static check for mypy: HTTPExtender satisfies the framework's Extender protocol
_check_protocol  # unused function (shared/ksched/extenders/http.py:214)

# read through getattr by kind (ClusterObjects' table of kinds)
_.priority_classes  # unused attribute (shared/ksched/framework/objects.py:29)
_.workloads  # unused attribute (shared/ksched/framework/objects.py:32)

# the PlacementScore extension point (TopologyAwareWorkloadScheduling, alpha): PodGroupPodsCount implements
# it; the placement algorithm that calls it is not implemented (docs/gang.md)
PlacementScorePlugin  # unused class (shared/ksched/framework/interfaces.py:146)
_.score_placement  # unused method (shared/ksched/plugins/podgrouppodscount.py:26)
_.normalize_placement_score  # unused method (shared/ksched/plugins/podgrouppodscount.py:37)

# subcommand entry points named as strings in ksched.cli.SUBCOMMANDS
up_main  # unused function (shared/ksched/launcher/cli.py:66)
demo_main  # unused function (shared/ksched/launcher/cli.py:82)

# Subjects properties that ksched.bus.endpoints names as strings (read with getattr, checked at import)
_.pending_pods_all  # unused property (shared/ksched/bus/subjects.py:86)
_.feed_batch  # unused property (shared/ksched/bus/subjects.py:98)
_.feed_nominated  # unused property (shared/ksched/bus/subjects.py:114): an endpoint builds it by name

# the single-event feed subjects of earlier informers: no longer written, still read through FEED and
# listed in docs/bus.md's table of subjects (tests/bus/test_endpoints.py checks both ways)
CLUSTER_EVENTS  # unused variable (shared/ksched/bus/endpoints.py:220)
