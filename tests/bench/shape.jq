# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The shape every benchmark report shares (README.md, "Benchmark JSON"):
# given one report, prints one line for each rule it breaks, nothing when
# it keeps them all. $program and $subcommand: who must have written it.

def check(what; cond): if (try cond catch false) then empty else what end;
def whole: type == "number" and . == floor and . >= 0;
def num_or_null: type == "number" or type == "null";
def str_or_null: type == "string" or type == "null";
def figure_keys: ["ops", "bytes", "elapsed_s", "MBps", "ops_per_s",
		  "p50_us", "p99_us", "mean_us", "min_us", "max_us"];
def ratio_keys: ["MBps", "ops_per_s", "p50_us", "p99_us"];
# an object with exactly these keys, each value passing f
def exactly(keys; f):
	type == "object" and (keys | sort) == (to_entries | map(.key) | sort)
	and all(.[]; f);
# the keys the shapes before rr-bench/1 used, gone for good
def old_keys: ["ratio_MBps", "goal", "libnfs_nfs_cp_MBps", "ratio_vs_libnfs",
	       "baseline", "msgs_per_s", "calls_per_s", "proc", "addr", "url",
	       "rdma", "tcp", "p50_ratio", "p99_ratio", "bs", "size"];

def baseline_rules:
	check("baseline: name is a string"; .name | type == "string" and length > 0),
	check("baseline \(.name): transport is rdma or tcp, or memory for a limit";
	      .transport == "rdma" or .transport == "tcp" or
	      (.transport == "memory" and
	       (.name == "memcpy" or (.name | startswith("process_vm_")) or
	        (.name | test("^server_(read|write)_limit$"))))),
	check("baseline \(.name): provider is a string or null";
	      .provider | str_or_null),
	check("baseline \(.name): target is a string or null";
	      .target | str_or_null),
	check("baseline \(.name): figures have the figure keys, numbers or null";
	      .figures | exactly(figure_keys; num_or_null)),
	check("baseline \(.name): MBps was measured";
	      .figures.MBps | type == "number"),
	check("baseline \(.name): ratio has the ratio keys, numbers or null";
	      .ratio | exactly(ratio_keys; num_or_null));

def goal_rules($names):
	check("goal: metric is a string"; .metric | type == "string"),
	check("goal \(.metric): baseline is null or a baseline's name";
	      .baseline == null or (.baseline as $b | $names | index([$b]))),
	check("goal \(.metric): comparison is <= or >=";
	      .comparison == "<=" or .comparison == ">="),
	check("goal \(.metric): target and value are numbers";
	      (.target | type == "number") and (.value | type == "number")),
	check("goal \(.metric): met is a boolean"; .met | type == "boolean");

if type != "object" then "not an object" else
	check("schema is rr-bench/1"; .schema == "rr-bench/1"),
	check("program is \($program)"; .program == $program),
	check("subcommand is \($subcommand)"; .subcommand == $subcommand),
	check("version is a string"; .version | type == "string"),
	check("operation is a string"; .operation | type == "string"
	      and length > 0),
	check("size_bytes is a whole number"; .size_bytes | whole),
	check("depth is a whole number >= 1"; .depth | whole and . >= 1),
	check("seconds is a number > 0"; .seconds | type == "number" and . > 0),
	check("latency is a string"; .latency | type == "string"),
	check("target is a string"; .target | type == "string" and length > 0),
	check("transport is rdma or tcp";
	      .transport == "rdma" or .transport == "tcp"),
	check("provider: a string over rdma, null over tcp";
	      if .transport == "rdma" then .provider | type == "string"
	      else .provider == null end),
	check("units: an object of strings, MBps among them";
	      (.units | type == "object" and all(.[]; type == "string"))
	      and (.units.MBps | type == "string")),
	check("figures have the figure keys, numbers or null";
	      .figures | exactly(figure_keys; num_or_null)),
	check("figures: a run that ended measured every figure";
	      .figures | all(.[]; type == "number")),
	check("baselines is an array"; .baselines | type == "array"),
	(.baselines[]? | baseline_rules),
	check("goals is an array"; .goals | type == "array"),
	([.baselines[]?.name] as $names | .goals[]? | goal_rules($names)),
	check("details is an object"; .details | type == "object"),
	check("no key of the old shapes at the top";
	      (keys - old_keys) == keys)
end
