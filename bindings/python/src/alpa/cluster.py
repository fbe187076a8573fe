"""Clusters (device, links, calibration) and logical meshes."""
from __future__ import annotations

import ctypes
import json
import os
from ctypes import c_double, c_int64, c_void_p, byref
from typing import Any, Sequence, Union

from ._handle import Owner
from ._lib import c_doc, call, buffer_call, cstr, lib
from .errors import InvalidArgumentError

DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "s8": 4, "s32": 5, "s64": 6, "pred": 7}

ClusterLike = Union["Cluster", str, "os.PathLike[str]"]


@c_doc("alpa_cluster_preset_count", "alpa_cluster_preset_name")
def cluster_presets() -> list[str]:
    """The canonical names of the built-in cluster presets."""
    return [cstr(lib.alpa_cluster_preset_name(i)) for i in range(lib.alpa_cluster_preset_count())]


class Cluster(Owner):
    """A cluster: hosts x devices per host identical devices, their links and the calibration of
    the roofline cost model. Immutable; may be shared between threads.

    Make one with ``Cluster.preset("p3.16xlarge", hosts=2)``, ``Cluster.parse("p3.16xlarge:2")``
    (what ``alpa plan --cluster`` accepts: ``PRESET:HOSTS``, a preset spec such as
    ``dgx-h100:hosts=2,devices_per_host=4``, or a cluster JSON file), ``Cluster.read(path)`` or
    ``Cluster.from_json(text)``."""

    _kind = "alpa_cluster"

    def __init__(self, _ptr: int) -> None:
        self._own(_ptr, lib.alpa_cluster_destroy, self._kind)

    @classmethod
    @c_doc("alpa_cluster_create_preset")
    def preset(cls, spec: str = "p3.16xlarge", hosts: int = 0) -> "Cluster":
        """A preset cluster; ``hosts`` > 0 overrides the spec's host count."""
        out = c_void_p()
        call(lib.alpa_cluster_create_preset, byref(out), spec.encode(), hosts)
        return cls(out.value)

    @classmethod
    @c_doc("alpa_cluster_read_file")
    def read(cls, path: "str | os.PathLike[str]") -> "Cluster":
        """Reads a cluster JSON file (docs/cluster-format.md)."""
        out = c_void_p()
        call(lib.alpa_cluster_read_file, byref(out), os.fsencode(path))
        return cls(out.value)

    @classmethod
    @c_doc("alpa_cluster_read_buffer")
    def from_json(cls, data: "str | bytes | dict[str, Any]") -> "Cluster":
        """A cluster from its JSON document (text, bytes or a dict)."""
        if isinstance(data, dict):
            data = json.dumps(data)
        raw = data.encode() if isinstance(data, str) else bytes(data)
        out = c_void_p()
        call(lib.alpa_cluster_read_buffer, byref(out), raw, len(raw))
        return cls(out.value)

    @classmethod
    def parse(cls, text: ClusterLike) -> "Cluster":
        """A cluster as ``alpa plan --cluster`` reads one: an existing file is a cluster JSON
        file; ``PRESET:HOSTS`` a preset with that many hosts; anything else a preset spec."""
        if isinstance(text, Cluster):
            return text
        text = os.fspath(text)
        if os.path.isfile(text):
            return cls.read(text)
        spec, hosts = text, 0
        head, sep, tail = text.partition(":")
        if sep and tail.isdigit() and len(tail) <= 9:
            hosts = int(tail)
            if hosts < 1:
                raise InvalidArgumentError(f'cluster "{text}" needs at least one host', 1)
            spec = head
        return cls.preset(spec, hosts)

    @c_doc("alpa_cluster_apply_calibration")
    def with_calibration(self, calibration: "str | bytes | dict[str, Any]") -> "Cluster":
        """A copy whose calibration is overridden by a calibration JSON document."""
        if isinstance(calibration, dict):
            calibration = json.dumps(calibration)
        raw = calibration.encode() if isinstance(calibration, str) else bytes(calibration)
        out = c_void_p()
        call(lib.alpa_cluster_apply_calibration, byref(out), self._ptr, raw, len(raw))
        return Cluster(out.value)

    @c_doc("alpa_cluster_to_json")
    def to_json(self) -> str:
        """The cluster as a JSON document (reading it back gives the same cluster)."""
        return buffer_call(lib.alpa_cluster_to_json, self._ptr).decode()

    @property
    def name(self) -> str:
        return cstr(lib.alpa_cluster_name(self._ptr))

    @property
    def hosts(self) -> int:
        return int(lib.alpa_cluster_hosts(self._ptr))

    @property
    def devices_per_host(self) -> int:
        return int(lib.alpa_cluster_devices_per_host(self._ptr))

    @property
    def devices(self) -> int:
        return self.hosts * self.devices_per_host

    @property
    def device_memory_bytes(self) -> int:
        return int(lib.alpa_cluster_device_memory_bytes(self._ptr))

    @property
    def device_memory_bandwidth(self) -> float:
        """Bytes per second of one device's memory."""
        return float(lib.alpa_cluster_device_memory_bandwidth(self._ptr))

    def peak_flops(self, dtype: "str | int" = "f16") -> float:
        """Peak FLOP/s of one device for a dtype ("f16", "f32", ... or an ALPA_DTYPE_*)."""
        return float(lib.alpa_cluster_peak_flops(self._ptr, _dtype(dtype)))

    def mesh(
        self, submesh_hosts: int, submesh_devices_per_host: int, shape: Sequence[int]
    ) -> "Mesh":
        """The logical mesh viewing a submesh of this cluster as ``shape`` (1-D or 2-D)."""
        return Mesh.from_cluster(self, submesh_hosts, submesh_devices_per_host, shape)

    def __repr__(self) -> str:
        if self.closed:
            return "<alpa.Cluster (closed)>"
        return f"<alpa.Cluster {self.name} {self.hosts}x{self.devices_per_host}>"


def _dtype(dtype: "str | int") -> int:
    if isinstance(dtype, str):
        try:
            return DTYPES[dtype.lower()]
        except KeyError:
            raise InvalidArgumentError(f"unknown dtype {dtype!r} (one of {', '.join(DTYPES)})", 1)
    return int(dtype)


class Mesh(Owner):
    """A logical 1-D or 2-D device mesh with a latency (alpha) and inverse bandwidth (beta) per
    dimension. Immutable."""

    _kind = "alpa_mesh"

    def __init__(self, _ptr: int) -> None:
        self._own(_ptr, lib.alpa_mesh_destroy, self._kind)

    @classmethod
    @c_doc("alpa_mesh_create_abstract")
    def abstract(
        cls,
        shape: Sequence[int],
        alpha: "Sequence[float] | None" = None,
        beta: "Sequence[float] | None" = None,
    ) -> "Mesh":
        """A mesh in Alpa's abstract cost units (for ``cost_model="alpa"``)."""
        n = len(shape)
        for what, v in (("alpha", alpha), ("beta", beta)):
            if v is not None and len(v) != n:
                raise InvalidArgumentError(f"{what}: {len(v)} values for {n} mesh dims", 1)
        shp = (c_int64 * n)(*shape)
        a = (c_double * n)(*alpha) if alpha is not None else None
        b = (c_double * n)(*beta) if beta is not None else None
        out = c_void_p()
        call(lib.alpa_mesh_create_abstract, byref(out), n, shp, a, b)
        return cls(out.value)

    @classmethod
    @c_doc("alpa_mesh_create")
    def from_cluster(
        cls,
        cluster: ClusterLike,
        submesh_hosts: int,
        submesh_devices_per_host: int,
        shape: Sequence[int],
    ) -> "Mesh":
        """The logical mesh of a submesh of a cluster."""
        c = Cluster.parse(cluster)
        n = len(shape)
        out = c_void_p()
        call(
            lib.alpa_mesh_create,
            byref(out),
            c._ptr,
            submesh_hosts,
            submesh_devices_per_host,
            n,
            (c_int64 * n)(*shape),
        )
        return cls(out.value)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(
            int(lib.alpa_mesh_dim_size(self._ptr, d)) for d in range(lib.alpa_mesh_ndim(self._ptr))
        )

    def alpha(self, dim: int = -1) -> float:
        """Latency of a dimension (-1: the flattened mesh)."""
        return float(lib.alpa_mesh_alpha(self._ptr, dim))

    def beta(self, dim: int = -1) -> float:
        """Inverse bandwidth of a dimension (-1: the flattened mesh)."""
        return float(lib.alpa_mesh_beta(self._ptr, dim))

    def __repr__(self) -> str:
        return "<alpa.Mesh (closed)>" if self.closed else f"<alpa.Mesh {self.shape}>"
