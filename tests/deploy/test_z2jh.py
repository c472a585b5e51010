"""deploy/z2jh/: the course's Helm values, the exchange's manifests, the image and the Dask workers
agree with the JupyterHub chart's schema and with each other (files only, no cluster).

Each check is one a wrong configuration fails: a misspelt chart key, an exchange role that cannot
read the groups, a server pointed at a Service that does not exist, a config path that is not in
the image, an image that runs as root or carries the hidden tests.

With ``Z2JH_CHART_DIR`` set to the chart's folder (``jupyterhub/`` of zero-to-jupyterhub-k8s at
tag 4.4.0, or ``helm pull --untar``'s), the values merged over the chart's defaults are also
checked against the whole schema, as ``helm install`` does.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
Z2JH = ROOT / "deploy" / "z2jh"
SCHEMA = Path(__file__).parent / "fixtures" / "z2jh-values.schema.subset.yaml"
COURSE = "dp-course"
EXCHANGE = "exchange"  # the service's name in hub.services: its prefix is /services/exchange/
REPO_IN_IMAGE = "/srv/dp-course"


def _documents(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((Z2JH / name).read_text()) if doc]


def _one(docs: list[dict], kind: str) -> dict:
    found = [doc for doc in docs if doc["kind"] == kind]
    assert len(found) == 1, f"{kind}: {len(found)} documents"
    return found[0]


def _env(container: dict) -> dict[str, dict]:
    return {item["name"]: item for item in container.get("env", [])}


@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load((Z2JH / "config.yaml").read_text())


@pytest.fixture(scope="module")
def exchange() -> dict[str, dict]:
    docs = _documents("exchange.yaml")
    kinds = ("Deployment", "Service", "PersistentVolumeClaim")
    return {kind: _one(docs, kind) for kind in kinds}


def _container(exchange: dict, name: str) -> dict:
    containers = exchange["Deployment"]["spec"]["template"]["spec"]["containers"]
    (container,) = [c for c in containers if c["name"] == name]
    return container


@pytest.fixture(scope="module")
def exchange_container(exchange) -> dict:
    return _container(exchange, "exchange")


@pytest.fixture(scope="module")
def handin_container(exchange) -> dict:
    return _container(exchange, "handin")


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (Z2JH / "Dockerfile").read_text()


def _profile(values: dict, slug: str) -> dict:
    (profile,) = [p for p in values["singleuser"]["profileList"] if p.get("slug") == slug]
    return profile


def _server_envs(values: dict) -> dict[str, dict]:
    """The environment of a student's server and of an instructor's."""
    student = values["singleuser"]["extraEnv"]
    instructor = _profile(values, "instructor")["kubespawner_override"]["environment"]
    return {"student": student, "instructor": instructor}


# ----------------------------------------------------------------------------- the chart's schema


def test_values_follow_the_charts_schema(values):
    schema = yaml.safe_load(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(values)


@pytest.mark.parametrize(
    "break_it",
    [
        lambda v: v["singleuser"].__setitem__("extraEnvs", v["singleuser"].pop("extraEnv")),
        lambda v: v["hub"].__setitem__("loadRole", v["hub"].pop("loadRoles")),
        lambda v: v.__setitem__("singleUser", v.pop("singleuser")),
        lambda v: v["singleuser"]["cpu"].__setitem__("limit", "1000m"),
        lambda v: v["singleuser"].__setitem__("uid", "1000"),
        lambda v: v["singleuser"]["storage"].__setitem__("type", "pvc"),
        lambda v: v["hub"]["config"].__setitem__("jupyterHub", {}),
    ],
    ids=[
        "extraEnvs",
        "loadRole",
        "singleUser",
        "cpu-as-string",
        "uid-as-string",
        "storage",
        "lower",
    ],
)
def test_the_schema_refuses_what_helm_refuses(values, break_it):
    """The fixture is strict where the chart is: a misspelt key or a wrong type fails."""
    schema = yaml.safe_load(SCHEMA.read_text())
    broken = copy.deepcopy(values)
    break_it(broken)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(broken)


def _coalesce(defaults: dict, given: dict) -> dict:
    """Helm's merge of a values file over the chart's defaults: maps merged, null deletes."""
    merged = copy.deepcopy(defaults)
    for key, value in given.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _coalesce(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@pytest.mark.skipif(not os.environ.get("Z2JH_CHART_DIR"), reason="Z2JH_CHART_DIR not set")
def test_values_merged_over_the_charts_defaults_follow_its_whole_schema(values):
    chart = Path(os.environ["Z2JH_CHART_DIR"])
    # the packaged chart has values.schema.json, the repository's folder values.schema.yaml
    packaged = chart / "values.schema.json"
    schema_file = packaged if packaged.is_file() else chart / "values.schema.yaml"
    schema = yaml.safe_load(schema_file.read_text())  # JSON is YAML
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    jsonschema.Draft7Validator(schema).validate(_coalesce(defaults, values))


# ---------------------------------------------------------------------------- the exchange service


def test_the_exchanges_role_reads_the_groups_and_nothing_more(values):
    roles = [r for r in values["hub"]["loadRoles"].values() if EXCHANGE in r.get("services", [])]
    assert len(roles) == 1, roles
    assert roles[0]["scopes"] == ["read:groups"]


def test_every_role_names_a_registered_service(values):
    """JupyterHub refuses to start when a role names a service it does not have."""
    services = set(values["hub"]["services"])
    for name, role in values["hub"]["loadRoles"].items():
        assert set(role.get("services", [])) <= services, name


def test_the_hub_routes_the_exchanges_prefix_to_its_service(values, exchange, exchange_container):
    service = exchange["Service"]
    (port,) = service["spec"]["ports"]
    url = f"http://{service['metadata']['name']}:{port['port']}"
    assert values["hub"]["services"][EXCHANGE]["url"] == url
    assert "command" not in values["hub"]["services"][EXCHANGE]  # external: the hub starts nothing
    env = _env(exchange_container)
    assert env["JUPYTERHUB_SERVICE_PREFIX"]["value"] == f"/services/{EXCHANGE}/"
    # the Service reaches the pod's port, where the service listens
    pod_labels = exchange["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (container_port,) = exchange_container["ports"]
    assert port["targetPort"] == container_port["name"]
    listen = env["JUPYTERHUB_SERVICE_URL"]["value"]
    assert listen.endswith(f":{container_port['containerPort']}"), listen


@pytest.mark.parametrize("who", ["student", "instructor"])
def test_servers_use_the_exchange_service(values, exchange, who):
    service = exchange["Service"]
    (port,) = service["spec"]["ports"]
    expected = f"http://{service['metadata']['name']}:{port['port']}/services/{EXCHANGE}"
    assert _server_envs(values)[who]["NBGRADER_EXCHANGE_URL"] == expected


def test_servers_may_reach_the_exchanges_pods_and_no_other(values, exchange, exchange_container):
    policy = values["singleuser"]["networkPolicy"]
    assert not policy.get("egressAllowRules", {}).get("privateIPs"), "every pod in reach"
    pod_labels = exchange["Deployment"]["spec"]["template"]["metadata"]["labels"]
    (container_port,) = exchange_container["ports"]
    (rule,) = policy["egress"]
    (target,) = rule["to"]
    assert set(target) == {"podSelector"}
    assert target["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert [p["port"] for p in rule["ports"]] == [container_port["containerPort"]]


def test_the_exchange_reaches_the_hubs_api(exchange, exchange_container):
    pod_labels = exchange["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert pod_labels.get("hub.jupyter.org/network-access-hub") == "true"  # the chart's policy
    assert _env(exchange_container)["JUPYTERHUB_API_URL"]["value"] == "http://hub:8081/hub/api"


def test_the_exchanges_token_and_database_come_from_secrets(exchange, exchange_container):
    env = _env(exchange_container)
    token = env["JUPYTERHUB_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    # the key the chart's hub Secret keeps a registered service's generated token under
    assert token == {"name": "hub", "key": f"hub.services.{EXCHANGE}.apiToken"}
    assert "value" not in env["EXCHANGE_DATABASE"]
    assert env["EXCHANGE_DATABASE"]["valueFrom"]["secretKeyRef"]["name"]
    argv = exchange_container["command"]
    assert argv[:5] == ["python", "-m", "coursetools", "exchange", "serve"]
    assert argv[argv.index("--database") + 1] == "$(EXCHANGE_DATABASE)"
    # the archives on the claimed volume
    (mount,) = exchange_container["volumeMounts"]
    assert argv[argv.index("--volume") + 1] == mount["mountPath"]
    volumes = exchange["Deployment"]["spec"]["template"]["spec"]["volumes"]
    (volume,) = [v for v in volumes if v["name"] == mount["name"]]
    claim = exchange["PersistentVolumeClaim"]["metadata"]["name"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim


# ------------------------------------------------------------------------- the course and its users


def test_the_course_groups_are_made_and_named_for_the_course(values):
    groups = values["hub"]["config"]["JupyterHub"]["load_groups"]
    assert set(groups) == {f"formgrade-{COURSE}", f"nbgrader-{COURSE}"}
    for who, env in _server_envs(values).items():
        assert env["COURSE_ID"] == COURSE, who
    # the instructor profile is offered by membership of the instructors' group
    assert f'"formgrade-{COURSE}" in groups' in values["hub"]["extraConfig"]["dp-course-profiles"]


def test_the_instructor_profile_repeats_the_servers_environment(values):
    """A profile's environment replaces extraEnv's: it must carry the exchange and the course."""
    envs = _server_envs(values)
    for key, value in envs["student"].items():
        if key != "JUPYTER_CONFIG_PATH":
            assert envs["instructor"].get(key) == value, key


@pytest.mark.parametrize(
    ("who", "folders"),
    [("student", ["deploy/student"]), ("instructor", ["deploy/instructor", "deploy/jupyter"])],
)
def test_config_paths_are_the_repositorys_folders_in_the_image(values, dockerfile, who, folders):
    """As on one machine (deploy/jupyterhub_config.py): a student's server reads deploy/student,
    an instructor's deploy/instructor then deploy/jupyter."""
    assert re.search(rf"^COPY \. {REPO_IN_IMAGE}$", dockerfile, re.M)
    path = _server_envs(values)[who]["JUPYTER_CONFIG_PATH"].split(":")
    assert path == [f"{REPO_IN_IMAGE}/{folder}" for folder in folders]
    for folder in folders:
        assert any((ROOT / folder).glob("*_config.*")), folder
    assert (ROOT / folders[0] / "nbgrader_config.py").is_file()


# ----------------------------------------------------------------------------------------- the image


def test_everything_runs_as_uid_1000_from_one_image(
    values, exchange, exchange_container, dockerfile
):
    assert values["singleuser"]["uid"] == 1000
    assert re.findall(r"^USER\s+(\S+)\s*$", dockerfile, re.M)[-1] == "1000"
    pod = exchange["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 1000
    image = f"{values['singleuser']['image']['name']}:{values['singleuser']['image']['tag']}"
    assert exchange_container["image"] == image


def test_the_image_installs_the_course_from_environment_yml(dockerfile):
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip  # environment.yml installs this repository
    lines = dockerfile.splitlines()
    workdir = lines.index(f"WORKDIR {REPO_IN_IMAGE}")
    create = next(i for i, line in enumerate(lines) if "env create --file environment.yml" in line)
    assert lines.index(f"COPY . {REPO_IN_IMAGE}") < workdir < create
    # the environment it made is the one on the PATH (environment.yml names it)
    env_path = re.search(r"^ENV PATH=([^:\s]+):", dockerfile, re.M).group(1)
    assert env_path == f"/opt/conda/envs/{environment['name']}/bin"


def test_the_image_leaves_out_the_hidden_tests():
    """Students run this image: solutions/ (solutions and hidden tests) must not be in it."""
    ignored = (Z2JH / "Dockerfile.dockerignore").read_text().split()
    assert "solutions/" in ignored
    assert (ROOT / "solutions").is_dir()


# ----------------------------------------------------------------------- the hand-in service's pod


def _handin_args(handin_container: dict):
    from coursetools.cli import build_parser

    argv = handin_container["command"]
    assert argv[:3] == ["python", "-m", "coursetools"]
    return build_parser().parse_args(argv[3:])  # argparse exits on an option it does not know


def test_the_handin_container_runs_a_command_coursetools_accepts(exchange, handin_container):
    args = _handin_args(handin_container)
    assert (args.command, args.action) == ("handin", "serve")
    (mount,) = handin_container["volumeMounts"]
    (exchange_mount,) = _container(exchange, "exchange")["volumeMounts"]
    assert mount == exchange_mount  # the exchange's own volume: its archives are the hand-ins
    assert str(args.http_exchange) == mount["mountPath"]
    assert args.http_exchange_database == "$(EXCHANGE_DATABASE)"
    assert (
        _env(handin_container)["EXCHANGE_DATABASE"]
        == _env(_container(exchange, "exchange"))["EXCHANGE_DATABASE"]
    )
    # everything it writes is on that volume, nothing in the image's read-only course folder
    build = _env(handin_container)["COURSE_BUILD_DIR"]["value"]
    for written in (args.state, args.grades, Path(build)):
        assert Path(written).is_relative_to(mount["mountPath"]), written
    assert str(args.source) == f"{REPO_IN_IMAGE}/solutions"
    assert args.course_id == COURSE
    config = Path(args.nbgrader_config)
    assert config.parent == Path(REPO_IN_IMAGE) and (ROOT / config.name).is_file()


def test_the_handin_container_grades_on_the_dask_cluster_it_may_reach(exchange, handin_container):
    docs = _documents("dask-grading.yaml")
    cluster = _one(docs, "DaskCluster")
    ports = {p["name"]: p["port"] for p in cluster["spec"]["scheduler"]["service"]["ports"]}
    service = f"{cluster['metadata']['name']}-scheduler"  # the operator's name for it
    assert _handin_args(handin_container).scheduler == f"tcp://{service}:{ports['tcp-comm']}"
    pod_labels = exchange["Deployment"]["spec"]["template"]["metadata"]["labels"]
    admitted = [s["podSelector"]["matchLabels"] for rule in _one(docs, "NetworkPolicy")["spec"][
        "ingress"] for s in rule["from"] if "podSelector" in s]  # fmt: skip
    assert any(labels.items() <= pod_labels.items() and "dp-course/grader" in labels
               for labels in admitted), admitted  # fmt: skip


def test_the_grader_image_is_the_course_image_plus_solutions_and_only_the_grader_runs_it(
    values, exchange, handin_container
):
    grader = (Z2JH / "Dockerfile.grader").read_text()
    course_image = f"{values['singleuser']['image']['name']}:{values['singleuser']['image']['tag']}"
    assert re.search(rf"^ARG COURSE_IMAGE={re.escape(course_image)}$", grader, re.M)
    assert re.search(r"^FROM \$\{COURSE_IMAGE\}$", grader, re.M)
    assert re.search(rf"^COPY solutions/ {REPO_IN_IMAGE}/solutions/$", grader, re.M)
    assert re.findall(r"^USER\s+(\S+)\s*$", grader, re.M)[-1] == "1000"
    ignore = [
        line
        for line in (Z2JH / "Dockerfile.grader.dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ignore[:2] == ["*", "!solutions/"]  # nothing else of the repository goes in
    # the grader image (hidden tests inside) runs in the handin container and nowhere else
    image = handin_container["image"]
    assert image != course_image and image.rsplit(":", 1)[1] == values["singleuser"]["image"]["tag"]
    others = [_container(exchange, "exchange")["image"]]
    cluster = _one(_documents("dask-grading.yaml"), "DaskCluster")
    for part in ("worker", "scheduler"):
        others += [c["image"] for c in cluster["spec"][part]["spec"]["containers"]]
    assert image not in others and set(others) == {course_image}
    assert image not in yaml.safe_dump(values)


def _course_config(env: dict[str, str]):
    """The course's nbgrader_config.py as nbgrader loads it, under ``env``."""
    from traitlets.config import Config

    config = Config()
    old = dict(os.environ)
    try:
        os.environ.update(env)
        exec(  # noqa: S102 - the repository's own configuration file
            compile((ROOT / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"),
            {"get_config": lambda: config, "__file__": "/srv/dp-course/nbgrader_config.py"},
        )
    finally:
        os.environ.clear()
        os.environ.update(old)
    return config


def test_the_grader_and_the_instructors_share_one_gradebook(values, handin_container, tmp_path):
    handin = _env(handin_container)
    instructor = _server_envs(values)["instructor"]
    assert "value" not in handin["COURSE_GRADEBOOK_URL"]
    assert (
        handin["COURSE_GRADEBOOK_URL"]["valueFrom"]
        == instructor["COURSE_GRADEBOOK_URL"]["valueFrom"]
    )
    assert "COURSE_GRADEBOOK_URL" not in _server_envs(values)["student"]
    # the course's nbgrader_config.py takes both (the one in the image, and each instructor's clone)
    build = str(tmp_path / "build")
    url = "postgresql+psycopg://grader@db/gradebook"
    config = _course_config({"COURSE_GRADEBOOK_URL": url, "COURSE_BUILD_DIR": build})
    assert config.CourseDirectory.db_url == url
    for step in ("submitted", "autograded", "feedback"):
        assert getattr(config.CourseDirectory, f"{step}_directory").startswith(build + "/"), step


# ------------------------------------------------------------------------------------ Dask workers


def test_the_dask_workers_run_the_course_image_behind_a_policy(values):
    docs = _documents("dask-grading.yaml")
    cluster = _one(docs, "DaskCluster")
    name = cluster["metadata"]["name"]
    image = f"{values['singleuser']['image']['name']}:{values['singleuser']['image']['tag']}"
    (worker,) = cluster["spec"]["worker"]["spec"]["containers"]
    (scheduler,) = cluster["spec"]["scheduler"]["spec"]["containers"]
    assert worker["image"] == scheduler["image"] == image
    # command, not args: the image's entrypoint would drop root before the sandbox needs it
    assert worker["command"][:2] == ["dask", "worker"] and "args" not in worker
    assert worker["securityContext"]["runAsUser"] == 0
    ports = {p["name"]: p["port"] for p in cluster["spec"]["scheduler"]["service"]["ports"]}
    assert ports["tcp-comm"] == 8786
    policy = _one(docs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"] == {"dask.org/cluster-name": name}
    sources = [s for rule in policy["spec"]["ingress"] for s in rule["from"]]
    assert sources and all(s.get("podSelector") or s.get("namespaceSelector") for s in sources)
    for source in sources:  # none admits the students' servers
        labels = source.get("podSelector", {}).get("matchLabels", {})
        assert "component" not in labels and "hub.jupyter.org/network-access-hub" not in labels
