"""Running a finished SPIR-V compute module on a Vulkan device.

    from nupp.targets.device import Binding, runner
    device = runner("wgpu")                  # or "vulkan"; one per kind per process
    out = device.run(spirv_bytes, [Binding(0, a_bytes, writable=False), Binding(1, b_bytes, writable=True)],
                     groups=(n // 64, 1, 1), needs=frozenset({"f64"}))
    out[1]                                   # binding 1's contents after the run
    device.execution_name                    # "spirv-lavapipe" on Mesa's CPU driver

Two runners execute the same module.  "wgpu" (wgpu-py, the seed's path) hands
the module to naga, which translates it and validates it before the Vulkan
driver sees it; "vulkan" (the `vulkan` cffi package) gives the driver the
module untranslated, so decorations naga drops (NoContraction) reach it.
Every binding is a storage buffer in descriptor set 0; the module's entry
point is "main".  Each runner keeps one device and its pipelines (cached by
the module's bytes) for the life of the process and frees a call's buffers
when the call ends.  A GPU is preferred to Mesa's CPU driver (lavapipe);
$NUPP_SPIRV_DEVICE, part of a device's name, picks one.

The driver trusts the module: run only modules spirv-val accepts
(`--target-env vulkan1.1`).  Whatever else goes wrong says which step failed:
`DeviceUnavailable` when there is no device, package or driver, or the device
lacks a feature or a limit the call needs (so a caller can run the code
elsewhere); `DeviceError` when an available device fails a step.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from nupp.emit_spirv.grammar import ENUMS, MAGIC_NUMBER, OPCODES
from nupp.paths import NuppEnvironmentError

RUNNERS = ("wgpu", "vulkan")
ENTRY_POINT = "main"
PIPELINES_KEPT = 128  # compiled pipelines kept per runner, least recently used dropped first
INSTALL_PACKAGES = "pip install 'nupp[spirv]' (the Python packages wgpu and vulkan)"
INSTALL_DRIVER = ("install a Vulkan driver and loader: on Debian, apt-get install mesa-vulkan-drivers "
                  "libvulkan1 (Mesa's lavapipe runs on the CPU)")
# Its name, set to a part of a device's name, picks that device when there are several.
DEVICE_VARIABLE = "NUPP_SPIRV_DEVICE"


class DeviceUnavailable(NuppEnvironmentError):
    """No Vulkan device, a missing package or driver, or a device lacking a
    feature: says which and what to install.  (An environment fault: the CLI
    exits 2 with this message.)"""


class DeviceError(RuntimeError):
    """An available device failed a step of running a module; the message names the step."""


@dataclass(frozen=True)
class Need:
    """An optional device feature a module may need."""

    capability: str      # the SPIR-V capability a module using it declares
    wgpu_feature: str
    vulkan_feature: str  # the member of VkPhysicalDeviceFeatures


NEEDS = {
    "f64": Need("Float64", "shader-f64", "shaderFloat64"),
    "i64": Need("Int64", "shader-int64", "shaderInt64"),
}


@dataclass(frozen=True)
class Binding:
    binding: int                             # descriptor set 0, this binding number; every binding a storage buffer
    data: bytes | bytearray | memoryview     # initial contents; length a multiple of 4 and >= 4
    writable: bool                           # False: the shader only reads it (the variable is NonWritable)


@dataclass(frozen=True)
class Limits:
    """What one dispatch may ask of a device."""

    max_groups: tuple[int, int, int]  # workgroups per dimension
    max_binding_bytes: int            # bytes of one storage buffer binding
    max_bindings: int                 # storage buffers one shader may use


# -- the process's runners -------------------------------------------------------------------

_opened: dict[str, Runner | DeviceUnavailable] = {}
_opening = threading.Lock()


def runner(kind: str = "wgpu") -> Runner:
    """The process's one runner of this kind (created on first use, then cached:
    one device and one pipeline cache per process).  Raises DeviceUnavailable with the reason."""
    if kind not in RUNNERS:
        raise ValueError(f"no SPIR-V runner named '{kind}' (runners: {', '.join(RUNNERS)})")
    with _opening:
        if kind not in _opened:
            try:
                _opened[kind] = _OPENERS[kind]()
            except DeviceUnavailable as unavailable:
                _opened[kind] = unavailable  # the reason stands for the process: do not probe again
    opened = _opened[kind]
    if isinstance(opened, DeviceUnavailable):
        raise DeviceUnavailable(str(opened))
    return opened


def open_runners() -> dict[str, Runner | DeviceUnavailable]:
    """Every runner kind: its runner, or why it does not open here."""
    opened: dict[str, Runner | DeviceUnavailable] = {}
    for kind in RUNNERS:
        try:
            opened[kind] = runner(kind)
        except DeviceUnavailable as unavailable:
            opened[kind] = unavailable
    return opened


def device_name_of(adapter_name: str) -> str:
    """"lavapipe" for Mesa's CPU driver (its device calls itself llvmpipe), else
    the name lower-cased with each run of other characters than letters and digits as "-"."""
    lowered = adapter_name.lower()
    if "llvmpipe" in lowered or "lavapipe" in lowered:
        return "lavapipe"
    return re.sub(r"[^a-z0-9]+", "-", lowered).strip("-")


def preferred(candidates: Sequence[tuple[str, int]]) -> int:
    """The index of the device to use among (name, rank) pairs, rank 0 best:
    the one whose name holds $NUPP_SPIRV_DEVICE when that is set, else the best ranked
    (a GPU before Mesa's CPU driver), the first of equals."""
    wanted = os.environ.get(DEVICE_VARIABLE, "").strip().lower()
    if wanted:
        named = [i for i, (name, _) in enumerate(candidates)
                 if wanted in name.lower() or wanted == device_name_of(name)]
        if not named:
            listed = ", ".join(name for name, _ in candidates) or "none"
            raise DeviceUnavailable(f"{DEVICE_VARIABLE}={wanted!r} names no Vulkan device here (devices: {listed})")
        return named[0]
    return min(range(len(candidates)), key=lambda i: candidates[i][1])


# -- a runner ------------------------------------------------------------------------------------

class Runner:
    """One Vulkan device, its pipelines, and the run of a module on it."""

    kind: str = ""

    def __init__(self, adapter_name: str, features: frozenset[str], limits: Limits):
        self.adapter_name = adapter_name         # as the driver names the device
        self.device_name = device_name_of(adapter_name)
        self.features = features                 # the NEEDS this device was opened with
        self.limits = limits
        self._pipelines: OrderedDict[tuple, object] = OrderedDict()
        self._lock = threading.Lock()            # one dispatch at a time on the queue

    @property
    def execution_name(self) -> str:
        return f"spirv-{self.device_name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} on {self.adapter_name}>"

    def run(self, spirv: bytes, bindings: Sequence[Binding], groups: tuple[int, int, int],
            needs: frozenset[str] = frozenset()) -> dict[int, bytes]:
        """Dispatch entry point "main" of the GLCompute module `spirv` over `groups` workgroups, every binding
        a storage buffer in set 0; returns the contents after the run of every writable binding, by binding number.
        `needs` may hold "f64" and "i64": request shader-f64 / shader-int64 (wgpu features) or shaderFloat64/shaderInt64
        (Vulkan device features); DeviceUnavailable if the device lacks one.  Pipelines are cached by the module's bytes."""
        spirv = bytes(spirv)
        check_module(spirv, needs)
        bindings = sorted(bindings, key=lambda b: b.binding)
        self._check_call(bindings, groups, needs)
        with self._lock:
            return self._run(self._pipeline(spirv, bindings), bindings, tuple(groups))

    def _check_call(self, bindings: list[Binding], groups: tuple[int, int, int], needs: frozenset[str]) -> None:
        lacking = sorted(needs - self.features)
        if lacking:
            names = ", ".join(f"{n} ({self._feature_name(NEEDS[n])})" for n in lacking)
            raise DeviceUnavailable(f"the {self.kind} runner's device {self.adapter_name} lacks {names}")
        check_bindings(bindings, self.limits)
        if len(groups) != 3 or not all(isinstance(g, int) and 0 <= g <= m
                                       for g, m in zip(groups, self.limits.max_groups)):
            raise ValueError(f"workgroup counts {groups} are not three integers from 0 to "
                             f"{self.limits.max_groups} (this device's limits)")

    def _pipeline(self, spirv: bytes, bindings: list[Binding]):
        key = (spirv, tuple((b.binding, b.writable) for b in bindings))
        if key in self._pipelines:
            self._pipelines.move_to_end(key)
        else:
            self._pipelines[key] = self._create_pipeline(spirv, bindings)
            if len(self._pipelines) > PIPELINES_KEPT:
                self._drop_pipeline(self._pipelines.popitem(last=False)[1])
        return self._pipelines[key]

    # what each kind provides
    def _feature_name(self, need: Need) -> str:
        raise NotImplementedError

    def _create_pipeline(self, spirv: bytes, bindings: list[Binding]):
        raise NotImplementedError

    def _drop_pipeline(self, pipeline) -> None:
        """Free what a pipeline holds (objects the garbage collector does not free)."""

    def _run(self, pipeline, bindings: list[Binding], groups: tuple[int, int, int]) -> dict[int, bytes]:
        raise NotImplementedError


def check_module(spirv: bytes, needs: frozenset[str]) -> None:
    """A SPIR-V binary whose Float64/Int64 capabilities are among `needs` (a module
    declaring one the caller did not ask for would run on one device and be refused on another)."""
    unknown = sorted(set(needs) - NEEDS.keys())
    if unknown:
        raise ValueError(f"unknown SPIR-V device needs {unknown} (known: {', '.join(NEEDS)})")
    if len(spirv) < 20 or len(spirv) % 4 or struct.unpack_from("<I", spirv)[0] != MAGIC_NUMBER:
        raise ValueError("not a little-endian SPIR-V binary (a header of five words, then whole words)")
    declared = declared_capabilities(spirv)
    unasked = sorted(n for n, need in NEEDS.items() if need.capability in declared and n not in needs)
    if unasked:
        raise ValueError(f"the module declares the capabilities of {unasked} but the call's needs do not hold them")


def declared_capabilities(spirv: bytes) -> set[str]:
    """The names of the module's OpCapability instructions (its first section)."""
    names = {value: name for name, value in ENUMS["Capability"].items()}
    found, offset = set(), 20
    while offset + 8 <= len(spirv):
        first, operand = struct.unpack_from("<2I", spirv, offset)
        if first & 0xFFFF != OPCODES["OpCapability"]:
            break
        found.add(names.get(operand, str(operand)))
        offset += 4 * max(first >> 16, 1)
    return found


def check_bindings(bindings: list[Binding], limits: Limits) -> None:
    numbers = [b.binding for b in bindings]
    if len(set(numbers)) != len(numbers) or any(n < 0 for n in numbers):
        raise ValueError(f"binding numbers {numbers} must be distinct and not negative")
    if len(bindings) > limits.max_bindings:
        raise DeviceUnavailable(f"{len(bindings)} storage buffers; this device lets a shader use {limits.max_bindings}")
    for b in bindings:
        view = memoryview(b.data)
        if not view.c_contiguous:
            raise ValueError(f"binding {b.binding}'s data is not contiguous: pass bytes or a contiguous buffer")
        size = view.nbytes
        if size < 4 or size % 4:
            raise ValueError(f"binding {b.binding} holds {size} bytes: a storage buffer needs a positive multiple of 4")
        if size > limits.max_binding_bytes:
            raise DeviceUnavailable(f"binding {b.binding} holds {size} bytes; this device binds at most "
                                    f"{limits.max_binding_bytes} bytes per storage buffer")


def _rank(kind: str) -> int:
    """A device kind's preference, 0 best: GPUs before virtual and CPU devices."""
    return {"discrete": 0, "integrated": 1, "virtual": 2}.get(kind, 3)


# -- wgpu ------------------------------------------------------------------------------------

# libwayland-client's complaint when Vulkan's surface support probes for a Wayland display:
# printed straight to file descriptor 2 while wgpu enumerates adapters, and harmless for compute.
WAYLAND_NOISE = b"XDG_RUNTIME_DIR is invalid or not set"
# naga's log line for each NoContraction it drops (documented below, and guarded against by the emitter)
NAGA_NOISE = b"Unknown decoration NoContraction"
WGPU_KINDS = {"DiscreteGPU": "discrete", "IntegratedGPU": "integrated", "CPU": "cpu"}


class WgpuRunner(Runner):
    """naga reads the module into its own IR and writes SPIR-V again.  What it gets wrong
    (wgpu 0.32; tests/test_device_runner.py runs the forms that work):
      * OpBitcast between a uvec2 and a 64-bit scalar: read as a bitcast of each component
        (a uvec2 -> f64 is a vec2<f32>), a wrong value without an error; join the words with
        OpUConvert, OpShiftLeftLogical and OpBitwiseOr instead;
      * OpSDiv, OpSRem, OpShiftRightArithmetic, OpConvertSToF compute by their operands' type,
        unsigned on uint operands (OpSNegate on uint is refused): bitcast operands to int first;
      * OpSMod goes through a float division (2147483647 smod 5 gives -33), and lavapipe's
        own OpSMod is a remainder (-7 smod 3 gives -1): derive the modulo from OpSRem;
      * NoContraction is dropped (and with it the exactness Mesa gives a decorated instruction:
        lavapipe then folds x - x to 0, (x + y) - x to y, and fuses binary32 a * b + c), and SPIR-V
        passthrough, which would keep it, is a feature wgpu-native does not offer: emit_spirv's
        KernelWriter.op keeps every float result out of reach of such rewriting."""

    kind = "wgpu"

    def __init__(self):
        wgpu = _import("wgpu")
        self._wgpu = wgpu
        adapter = self._adapter()
        offered = set(adapter.features)
        features = frozenset(n for n, need in NEEDS.items() if need.wgpu_feature in offered)
        limits = adapter.limits
        wanted_limits = {name: limits[name] for name in (
            "max-storage-buffer-binding-size", "max-buffer-size", "max-storage-buffers-per-shader-stage")}
        with _step("wgpu", "requesting a device", DeviceUnavailable):
            self._device = adapter.request_device_sync(
                required_features=[NEEDS[n].wgpu_feature for n in sorted(features)],
                required_limits=wanted_limits)
        per_dimension = limits["max-compute-workgroups-per-dimension"]
        super().__init__(adapter.info["device"] or adapter.info["description"], features, Limits(
            max_groups=(per_dimension,) * 3,
            max_binding_bytes=min(limits["max-storage-buffer-binding-size"], limits["max-buffer-size"]),
            max_bindings=limits["max-storage-buffers-per-shader-stage"]))

    def _adapter(self):
        from wgpu.backends.wgpu_native import extras
        with _step("wgpu", "enumerating Vulkan adapters", DeviceUnavailable):
            try:
                extras.set_instance_extras(backends=["Vulkan"])  # SPIR-V's own API; no GL fallback
            except RuntimeError:
                pass  # another user of wgpu in this process made the instance first: use its adapters
            with _stderr_without(WAYLAND_NOISE):
                adapters = [a for a in self._wgpu.gpu.enumerate_adapters_sync()
                            if a.info["backend_type"] == "Vulkan"]
        if not adapters:
            raise DeviceUnavailable(f"wgpu finds no Vulkan adapter; {INSTALL_DRIVER}")
        return adapters[preferred([(a.info["device"], _rank(WGPU_KINDS.get(a.info["adapter_type"], "")))
                                   for a in adapters])]

    def _feature_name(self, need: Need) -> str:
        return f"wgpu feature {need.wgpu_feature}"

    def _create_pipeline(self, spirv: bytes, bindings: list[Binding]):
        wgpu, device = self._wgpu, self._device
        with _step("wgpu", "translating the module (naga)"), _stderr_without(NAGA_NOISE):
            shader = device.create_shader_module(code=spirv)
        with _step("wgpu", "creating the compute pipeline"):
            group_layout = device.create_bind_group_layout(entries=[
                {"binding": b.binding, "visibility": wgpu.ShaderStage.COMPUTE,
                 "buffer": {"type": wgpu.BufferBindingType.storage if b.writable
                            else wgpu.BufferBindingType.read_only_storage}}
                for b in bindings])
            layout = device.create_pipeline_layout(bind_group_layouts=[group_layout])
            pipeline = device.create_compute_pipeline(
                layout=layout, compute={"module": shader, "entry_point": ENTRY_POINT})
        return pipeline, group_layout

    def _run(self, pipeline, bindings, groups):
        wgpu, device = self._wgpu, self._device
        compute_pipeline, group_layout = pipeline
        made = []
        try:
            with _step("wgpu", "uploading the buffers"):
                buffers = {}
                for b in bindings:
                    buffers[b.binding] = device.create_buffer_with_data(
                        data=b.data, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
                    made.append(buffers[b.binding])
                readback = {}
                for b in bindings:
                    if b.writable:
                        readback[b.binding] = device.create_buffer(
                            size=buffers[b.binding].size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
                        made.append(readback[b.binding])
                group = device.create_bind_group(layout=group_layout, entries=[
                    {"binding": n, "resource": {"buffer": buf, "offset": 0, "size": buf.size}}
                    for n, buf in buffers.items()])
            with _step("wgpu", "dispatching"):
                encoder = device.create_command_encoder()
                compute = encoder.begin_compute_pass()
                compute.set_pipeline(compute_pipeline)
                compute.set_bind_group(0, group)
                compute.dispatch_workgroups(*groups)
                compute.end()
                for n, target in readback.items():
                    encoder.copy_buffer_to_buffer(buffers[n], 0, target, 0, target.size)
                device.queue.submit([encoder.finish()])
            with _step("wgpu", "reading the results"):
                results = {}
                for n, target in readback.items():
                    target.map_sync(wgpu.MapMode.READ)
                    results[n] = bytes(target.read_mapped(copy=False))
                    target.unmap()
                return results
        finally:
            for buffer in made:
                buffer.destroy()


@contextlib.contextmanager
def _stderr_without(noise: bytes) -> Iterator[None]:
    """Run the body with file descriptor 2 captured, then pass on every line but those holding `noise`."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().splitlines(keepends=True) if noise not in line]
            if kept:
                os.write(2, b"".join(kept))


# -- raw Vulkan --------------------------------------------------------------------------------

VULKAN_KINDS = {1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}  # VkPhysicalDeviceType
UINT64_MAX = (1 << 64) - 1


class VulkanRunner(Runner):
    kind = "vulkan"

    def __init__(self):
        vk = self._vk = _import("vulkan")
        with _step("vulkan", "creating the instance", DeviceUnavailable):
            self._instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=vk.VkApplicationInfo(
                pApplicationName="nupp", pEngineName="nupp", apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))), None)
            physicals = vk.vkEnumeratePhysicalDevices(self._instance)
        if not physicals:
            raise DeviceUnavailable(f"the Vulkan loader finds no device; {INSTALL_DRIVER}")
        properties = [vk.vkGetPhysicalDeviceProperties(p) for p in physicals]
        chosen = preferred([(p.deviceName, _rank(VULKAN_KINDS.get(p.deviceType, ""))) for p in properties])
        physical, props = physicals[chosen], properties[chosen]
        offered = vk.vkGetPhysicalDeviceFeatures(physical)
        features = frozenset(n for n, need in NEEDS.items() if getattr(offered, need.vulkan_feature))
        family = self._compute_family(physical, props.deviceName)
        with _step("vulkan", "creating the device", DeviceUnavailable):
            # The bindings copy a struct array by value: the structs (owners of what they point to) must outlive the call.
            queue = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, pQueuePriorities=[1.0])
            self._device = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(
                pQueueCreateInfos=[queue],
                pEnabledFeatures=vk.VkPhysicalDeviceFeatures(
                    **{NEEDS[n].vulkan_feature: vk.VK_TRUE for n in features})), None)
            self._queue = vk.vkGetDeviceQueue(self._device, family, 0)
            self._commands = vk.vkCreateCommandPool(self._device, vk.VkCommandPoolCreateInfo(
                flags=vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT, queueFamilyIndex=family), None)
            self._fence = vk.vkCreateFence(self._device, vk.VkFenceCreateInfo(), None)
        self._memory_types = vk.vkGetPhysicalDeviceMemoryProperties(physical)
        device_limits = props.limits
        super().__init__(props.deviceName, features, Limits(
            max_groups=tuple(device_limits.maxComputeWorkGroupCount),
            max_binding_bytes=device_limits.maxStorageBufferRange,
            max_bindings=device_limits.maxPerStageDescriptorStorageBuffers))

    def _compute_family(self, physical, name: str) -> int:
        families = self._vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
        for index, family in enumerate(families):
            if family.queueFlags & self._vk.VK_QUEUE_COMPUTE_BIT:
                return index
        raise DeviceUnavailable(f"the Vulkan device {name} has no compute queue")

    def _feature_name(self, need: Need) -> str:
        return f"Vulkan device feature {need.vulkan_feature}"

    def _create_pipeline(self, spirv: bytes, bindings: list[Binding]):
        vk, device = self._vk, self._device
        with _step("vulkan", "creating the shader module"):
            shader = vk.vkCreateShaderModule(device, vk.VkShaderModuleCreateInfo(
                codeSize=len(spirv), pCode=spirv), None)
        try:
            with _step("vulkan", "creating the compute pipeline"):
                set_layout = vk.vkCreateDescriptorSetLayout(device, vk.VkDescriptorSetLayoutCreateInfo(pBindings=[
                    vk.VkDescriptorSetLayoutBinding(binding=b.binding, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                    for b in bindings]), None)
                layout = vk.vkCreatePipelineLayout(device, vk.VkPipelineLayoutCreateInfo(
                    pSetLayouts=[set_layout]), None)
                # Copied into the pipeline's struct by value: keep it, the owner of the name it points to, alive.
                stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=shader,
                                                           pName=ENTRY_POINT)
                pipeline = vk.vkCreateComputePipelines(device, vk.VK_NULL_HANDLE, 1, [
                    vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)], None)[0]
        finally:
            vk.vkDestroyShaderModule(device, shader, None)  # the pipeline keeps what it needs
        return pipeline, layout, set_layout

    def _drop_pipeline(self, pipeline) -> None:
        compute_pipeline, layout, set_layout = pipeline
        self._vk.vkDestroyPipeline(self._device, compute_pipeline, None)
        self._vk.vkDestroyPipelineLayout(self._device, layout, None)
        self._vk.vkDestroyDescriptorSetLayout(self._device, set_layout, None)

    def _run(self, pipeline, bindings, groups):
        compute_pipeline, layout, set_layout = pipeline
        with contextlib.ExitStack() as cleanup:
            with _step("vulkan", "uploading the buffers"):
                buffers = {b.binding: self._buffer(b.data, cleanup) for b in bindings}
                descriptors = self._descriptor_set(set_layout, buffers, cleanup)
            with _step("vulkan", "dispatching"):
                self._dispatch(compute_pipeline, layout, descriptors, groups, cleanup)
            with _step("vulkan", "reading the results"):
                return {b.binding: self._read(*buffers[b.binding]) for b in bindings if b.writable}

    def _buffer(self, data, cleanup: contextlib.ExitStack):
        """A host-visible, coherent storage buffer holding `data`: (buffer, memory, size)."""
        vk, device = self._vk, self._device
        size = memoryview(data).nbytes
        buffer = vk.vkCreateBuffer(device, vk.VkBufferCreateInfo(
            size=size, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        cleanup.callback(vk.vkDestroyBuffer, device, buffer, None)
        required = vk.vkGetBufferMemoryRequirements(device, buffer)
        memory = vk.vkAllocateMemory(device, vk.VkMemoryAllocateInfo(
            allocationSize=required.size, memoryTypeIndex=self._host_memory_type(required.memoryTypeBits)), None)
        cleanup.callback(vk.vkFreeMemory, device, memory, None)
        vk.vkBindBufferMemory(device, buffer, memory, 0)
        mapped = vk.vkMapMemory(device, memory, 0, size, 0)
        mapped[:] = memoryview(data).cast("B")
        vk.vkUnmapMemory(device, memory)
        return buffer, memory, size

    def _host_memory_type(self, allowed: int) -> int:
        wanted = self._vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | self._vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        for index in range(self._memory_types.memoryTypeCount):
            if allowed >> index & 1 and self._memory_types.memoryTypes[index].propertyFlags & wanted == wanted:
                return index
        raise DeviceUnavailable(f"the Vulkan device {self.adapter_name} has no host-visible coherent memory "
                                "for storage buffers")

    def _descriptor_set(self, set_layout, buffers: dict, cleanup: contextlib.ExitStack):
        vk, device = self._vk, self._device
        pool = vk.vkCreateDescriptorPool(device, vk.VkDescriptorPoolCreateInfo(maxSets=1, pPoolSizes=[
            vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=len(buffers))]), None)
        cleanup.callback(vk.vkDestroyDescriptorPool, device, pool, None)  # frees its set too
        descriptors = vk.vkAllocateDescriptorSets(device, vk.VkDescriptorSetAllocateInfo(
            descriptorPool=pool, pSetLayouts=[set_layout]))[0]
        vk.vkUpdateDescriptorSets(device, len(buffers), [vk.VkWriteDescriptorSet(
            dstSet=descriptors, dstBinding=n, descriptorCount=1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=buffer, offset=0, range=size)])
            for n, (buffer, _, size) in buffers.items()], 0, None)
        return descriptors

    def _dispatch(self, compute_pipeline, layout, descriptors, groups, cleanup: contextlib.ExitStack) -> None:
        """Record, submit and wait for one dispatch whose writes the host may then read."""
        vk, device = self._vk, self._device
        commands = vk.vkAllocateCommandBuffers(device, vk.VkCommandBufferAllocateInfo(
            commandPool=self._commands, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        cleanup.callback(vk.vkFreeCommandBuffers, device, self._commands, 1, [commands])
        vk.vkBeginCommandBuffer(commands, vk.VkCommandBufferBeginInfo(
            flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        vk.vkCmdBindPipeline(commands, vk.VK_PIPELINE_BIND_POINT_COMPUTE, compute_pipeline)
        vk.vkCmdBindDescriptorSets(commands, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, [descriptors], 0, None)
        vk.vkCmdDispatch(commands, *groups)
        vk.vkCmdPipelineBarrier(commands, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, 0,
                                1, [vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                                                       dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)], 0, None, 0, None)
        vk.vkEndCommandBuffer(commands)
        vk.vkQueueSubmit(self._queue, 1, [vk.VkSubmitInfo(pCommandBuffers=[commands])], self._fence)
        try:
            vk.vkWaitForFences(device, 1, [self._fence], vk.VK_TRUE, UINT64_MAX)
        finally:
            vk.vkResetFences(device, 1, [self._fence])

    def _read(self, buffer, memory, size: int) -> bytes:
        mapped = self._vk.vkMapMemory(self._device, memory, 0, size, 0)
        try:
            return bytes(mapped)
        finally:
            self._vk.vkUnmapMemory(self._device, memory)


# -- shared plumbing -----------------------------------------------------------------------------

def _import(package: str):
    """The Python package of a runner; DeviceUnavailable names what to install when it or its library is missing."""
    try:
        return __import__(package)
    except ImportError:
        raise DeviceUnavailable(f"the Python package {package} is not installed; {INSTALL_PACKAGES}") from None
    except OSError as err:  # `vulkan` loads libvulkan.so.1 on import
        raise DeviceUnavailable(f"the Python package {package} cannot load the Vulkan loader ({err}); "
                                f"{INSTALL_DRIVER}") from None
    except Exception as err:  # a broken install (wgpu also asserts on its logger's class at import)
        raise DeviceUnavailable(f"the Python package {package} fails to import ({type(err).__name__}: {err}); "
                                f"reinstall it: {INSTALL_PACKAGES}") from err


@contextlib.contextmanager
def _step(kind: str, step: str, failure: type[Exception] = DeviceError) -> Iterator[None]:
    """Turn whatever the driver or its bindings raise during `step` into `failure` naming the step."""
    try:
        yield
    except (DeviceUnavailable, DeviceError):
        raise
    except Exception as err:  # wgpu's GPUError family, vulkan's VkError family, cffi's errors
        detail = str(err).strip() or type(err).__name__
        if failure is DeviceUnavailable:
            detail += f"; {INSTALL_DRIVER}"
        raise failure(f"{kind} runner: {step} failed: {detail}") from err


_OPENERS = {"wgpu": WgpuRunner, "vulkan": VulkanRunner}
