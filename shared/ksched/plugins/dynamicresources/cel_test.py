"""CEL device selectors: the Kubernetes DRA environment on cel-expr-python (upstream ``cel/compile_test.go``
cases where they apply)."""

from __future__ import annotations

import pytest

from ksched.api.resource import Device, DeviceAttribute, DeviceCapacity
from ksched.plugins.dynamicresources import semver
from ksched.plugins.dynamicresources.cel import CelCache, CelRuntimeError, compile_selector

DRIVER = "dra.example.com"
DEVICE = Device(
    name="gpu-0",
    attributes={
        "model": DeviceAttribute(string_value="a100"),
        "index": DeviceAttribute(int_value=3),
        "healthy": DeviceAttribute(bool_value=True),
        "driverVersion": DeviceAttribute(version_value="1.2.3"),
        "other.example.com/zone": DeviceAttribute(string_value="z1"),
    },
    capacity={"memory": DeviceCapacity(value="80Gi"), "cores": DeviceCapacity(value="500m")},
)


def matches(expression: str, device: Device = DEVICE) -> bool:
    selector = compile_selector(expression)
    assert selector.error is None, selector.error
    return selector.matches(device, DRIVER)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "dra.example.com"', True),
        ('device.driver == "other"', False),
        ('device.attributes["dra.example.com"].model == "a100"', True),
        ('device.attributes["dra.example.com"].index > 2', True),
        ('device.attributes["dra.example.com"].healthy', True),
        ('device.attributes["other.example.com"].zone == "z1"', True),
        ('device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["dra.example.com"].memory.compareTo(quantity("81920Mi")) == 0', True),
        ('device.capacity["dra.example.com"].memory == quantity("85899345920")', True),
        ('device.capacity["dra.example.com"].memory.isLessThan(quantity("1Ti"))', True),
        ('device.capacity["dra.example.com"].cores.isGreaterThan(quantity("0.4"))', True),
        ('device.capacity["dra.example.com"].cores.isInteger()', False),
        ('device.capacity["dra.example.com"].memory.asInteger() == 85899345920', True),
        ('device.capacity["dra.example.com"].memory.sub(quantity("40Gi")) == quantity("40Gi")', True),
        ('device.capacity["dra.example.com"].cores.add(1).asApproximateFloat() == 1.5', True),
        ('device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))', True),
        ('device.attributes["dra.example.com"].driverVersion.compareTo(semver("1.2.3")) == 0', True),
        ('device.attributes["dra.example.com"].driverVersion.major() == 1', True),
        ('isQuantity("10Gi") && !isQuantity("10 Gi") && isSemver("1.0.0") && !isSemver("v1")', True),
        ("device.allowMultipleAllocations", False),
        # a domain the device does not have reads as an empty map (upstream's map with a default)
        ('device.attributes["unknown.example.com"].size() == 0', True),
        ('!("model" in device.attributes["unknown.example.com"])', True),
        ('cel.bind(dra, device.attributes["dra.example.com"], dra.model == "a100" && dra.index == 3)', True),
        ('device.attributes["dra.example.com"].model.startsWith("a1")', True),
        ('device.attributes["dra.example.com"].exists(k, k == "model")', True),
    ],
)
def test_selector_results(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        (
            "device.driver ==",
            "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting "
            "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
            "BYTES, IDENTIFIER}\n | device.driver ==\n | ................^",
        ),
        ("1 + 1", "must evaluate to bool or the unknown type, not int"),
        ('"a"', "must evaluate to bool or the unknown type, not string"),
    ],
)
def test_compile_errors_read_as_upstream(expression: str, error: str) -> None:
    assert compile_selector(expression).error == error


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ('device.attributes["dra.example.com"].missing == 1', "no such key: missing"),
        ("device.driver", "CEL result of type string could not be converted to bool"),
        ('quantity("1x") == quantity("1")', "invalid quantity '1x'"),
        ('device.attributes["dra.example.com"].index.compareTo(quantity("1")) == 0', "no such overload"),
    ],
)
def test_runtime_errors(expression: str, error: str) -> None:
    with pytest.raises(CelRuntimeError, match=error.replace("(", r"\(")):
        matches(expression)


def test_list_attributes_are_an_error_without_dra_list_type_attributes() -> None:
    device = Device(name="d", attributes={"ports": DeviceAttribute(int_values=[1, 2])})
    with pytest.raises(CelRuntimeError, match="attribute ports: unsupported attribute value"):
        matches("true", device)


def test_the_cache_compiles_once_and_results_are_remembered_per_device() -> None:
    cache = CelCache(size=2)
    first = cache.get_or_compile('device.driver == "dra.example.com"')
    assert cache.get_or_compile('device.driver == "dra.example.com"') is first
    assert first.matches(DEVICE, DRIVER)
    assert first._results[id(DEVICE)] == (DEVICE, True)
    cache.get_or_compile("true")
    cache.get_or_compile("false")
    assert len(cache) == 2
    assert cache.get_or_compile('device.driver == "dra.example.com"') is not first  # evicted


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("1.2.3", "1.2.3", 0),
        ("1.2.3", "1.10.0", -1),
        ("1.0.0-alpha", "1.0.0", -1),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta", -1),
        ("1.0.0-beta.11", "1.0.0-beta.2", 1),
        ("1.0.0+build.1", "1.0.0", 0),
    ],
)
def test_semver_ordering(a: str, b: str, order: int) -> None:
    assert semver.compare(semver.parse(a), semver.parse(b)) == order


@pytest.mark.parametrize("text", ["", "1.2", "v1.2.3", "01.2.3", "1.2.3-01", "1.2.3-a..b"])
def test_semver_rejects(text: str) -> None:
    assert not semver.is_valid(text)
