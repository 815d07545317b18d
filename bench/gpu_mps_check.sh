#!/usr/bin/env bash
# MPS memory caps on a real GPU, without Kubernetes: does the cap the NVIDIA device plugin sets fence one
# learner's memory from the others, for non-root clients? (docs/sharing-kinds.md "The device check")
#
# It does what the plugin's MPS control daemon does (NVIDIA/k8s-device-plugin v0.20.0
# cmd/mps-control-daemon/mps/daemon.go): as root, set the GPU's compute mode to EXCLUSIVE_PROCESS, create the
# pipe and log directories 0755, start `nvidia-cuda-mps-control -d`, then send
# `set_default_device_pinned_mem_limit <index> <totalMiB/R>M` and `set_default_active_thread_percentage <100/R>`.
# Then three clients run as one non-root UID (the notebooks' 1000, as every hub notebook runs), each given
# only CUDA_MPS_PIPE_DIRECTORY, as the plugin's Allocate does (internal/plugin/mps.go):
#   - two "steady" clients allocate half their cap and keep writing it;
#   - one "greedy" client allocates past its cap, 256 MiB at a time, and must get CUDA_ERROR_OUT_OF_MEMORY;
#   - then a "raiser" does the same after setting CUDA_MPS_PINNED_DEVICE_MEM_LIMIT to the whole GPU in its own
#     environment, as a learner could from a notebook: the figures say whether a client can lift its cap;
# and the two steady clients must still be running, with their memory, after the greedy one's OOM.
#
# Usage: sudo bench/gpu_mps_check.sh            (REPLICAS=3 GPU_INDEX=0 CLIENT_UID=1000 HOLD_SECONDS=20)
# Exit 0 with "SKIP: <reason>" where it cannot run (no GPU, no MPS binary, not root, no python3);
# exit 0 with "PASS" when the caps hold, 1 with "FAIL: <what>" when they do not.
set -euo pipefail

REPLICAS="${REPLICAS:-3}"
GPU_INDEX="${GPU_INDEX:-0}"
CLIENT_UID="${CLIENT_UID:-1000}"
HOLD_SECONDS="${HOLD_SECONDS:-20}"
NVIDIA_SMI="${GPU_MPS_CHECK_NVIDIA_SMI:-nvidia-smi}"
MPS_CONTROL="${GPU_MPS_CHECK_MPS_CONTROL:-nvidia-cuda-mps-control}"

skip() {
  echo "SKIP: $*"
  exit 0
}

command -v "$NVIDIA_SMI" >/dev/null 2>&1 || skip "no NVIDIA GPU here ($NVIDIA_SMI not found)"
"$NVIDIA_SMI" -L >/dev/null 2>&1 || skip "no NVIDIA GPU here ($NVIDIA_SMI -L failed)"
command -v "$MPS_CONTROL" >/dev/null 2>&1 || skip "$MPS_CONTROL not found (the driver's MPS binaries)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found (the clients use libcuda through ctypes)"
[ "$(id -u)" -eq 0 ] || skip "needs root, as the plugin's privileged MPS control daemon (compute mode, setuid clients)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv not found (util-linux; runs the clients as UID $CLIENT_UID)"

query() { "$NVIDIA_SMI" -i "$GPU_INDEX" --query-gpu="$1" --format=csv,noheader,nounits | head -n1 | tr -d ' '; }
GPU_NAME="$("$NVIDIA_SMI" -i "$GPU_INDEX" --query-gpu=name --format=csv,noheader | head -n1)"
TOTAL_MIB="$(query memory.total)"
CC="$(query compute_cap)"
MODE_BEFORE="$(query compute_mode)"
CAP_MIB=$((TOTAL_MIB / REPLICAS)) # the plugin: totalMemory/replicas/1024/1024, in M
THREADS=$((100 / REPLICAS))

ROOT="$(mktemp -d /tmp/gpu-mps-check.XXXXXX)"
chmod 0755 "$ROOT" # every directory above the pipe directory must be traversable by the clients' UID
PIPE="$ROOT/pipe"
LOG="$ROOT/log"
mkdir -m 0755 "$PIPE" "$LOG" # as the daemon does: os.MkdirAll(dir, 0755), owned by root
export CUDA_MPS_PIPE_DIRECTORY="$PIPE" CUDA_MPS_LOG_DIRECTORY="$LOG"

cleanup() {
  echo quit | "$MPS_CONTROL" >/dev/null 2>&1 || true
  sleep 1
  "$NVIDIA_SMI" -i "$GPU_INDEX" -c "${MODE_BEFORE:-DEFAULT}" >/dev/null 2>&1 || true
  rm -rf "$ROOT"
}
trap cleanup EXIT

"$NVIDIA_SMI" -i "$GPU_INDEX" -c EXCLUSIVE_PROCESS >/dev/null
CUDA_VISIBLE_DEVICES="$GPU_INDEX" "$MPS_CONTROL" -d
echo "set_default_device_pinned_mem_limit 0 ${CAP_MIB}M" | "$MPS_CONTROL" >/dev/null
echo "set_default_active_thread_percentage $THREADS" | "$MPS_CONTROL" >/dev/null

cat >"$ROOT/client.py" <<'PY'
"""One MPS client through the CUDA driver API: allocate `target` MiB in 256 MiB steps, then keep writing it."""
import ctypes, sys, time

role, target_mib, hold, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
cuda = ctypes.CDLL("libcuda.so.1")
OOM = 2  # CUDA_ERROR_OUT_OF_MEMORY
def check(status, what):
    if status != 0:
        raise SystemExit(f"{role}: {what} failed with CUDA error {status}")
check(cuda.cuInit(0), "cuInit")
device, context = ctypes.c_int(), ctypes.c_void_p()
check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
step, held, blocks, result = 256, 0, [], "ok"
while held < target_mib:
    size = min(step, target_mib - held)
    pointer = ctypes.c_uint64()
    status = cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size << 20))
    if status == OOM:
        result = "oom"
        break
    check(status, "cuMemAlloc")
    blocks.append((pointer, size))
    held += size
with open(out, "w") as report:
    report.write(f"{role} {result} {held}\n")
deadline = time.time() + hold
while result == "ok" and time.time() < deadline:  # keep using the memory: still alive, still ours
    for pointer, size in blocks:
        check(cuda.cuMemsetD8_v2(pointer, 0x5A, ctypes.c_size_t(size << 20)), "cuMemsetD8")
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    time.sleep(0.5)
with open(out, "a") as report:
    report.write(f"{role} done {held}\n")
PY
chmod 0755 "$ROOT/client.py"

as_client() {
  setpriv --reuid="$CLIENT_UID" --regid="$CLIENT_UID" --clear-groups \
    env -i PATH=/usr/bin:/bin CUDA_MPS_PIPE_DIRECTORY="$PIPE" ${RAISE:+CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="$RAISE"} \
    python3 "$ROOT/client.py" "$@"
}
STEADY_MIB=$((CAP_MIB / 2))
GREEDY_MIB=$((CAP_MIB * 3 / 2))
touch "$ROOT/steady-1.txt" "$ROOT/steady-2.txt" "$ROOT/greedy.txt" "$ROOT/raiser.txt"
chown "$CLIENT_UID:$CLIENT_UID" "$ROOT"/*.txt
START=$(date +%s)
as_client steady-1 "$STEADY_MIB" "$HOLD_SECONDS" "$ROOT/steady-1.txt" &
S1=$!
as_client steady-2 "$STEADY_MIB" "$HOLD_SECONDS" "$ROOT/steady-2.txt" &
S2=$!
sleep 3
as_client greedy "$GREEDY_MIB" 0 "$ROOT/greedy.txt" || true
GREEDY="$(head -n1 "$ROOT/greedy.txt" 2>/dev/null || true)"
RAISE="0=${TOTAL_MIB}M" as_client raiser "$GREEDY_MIB" 0 "$ROOT/raiser.txt" || true
RAISER="$(head -n1 "$ROOT/raiser.txt" 2>/dev/null || true)"
STEADY_OK=0
wait "$S1" && STEADY_OK=$((STEADY_OK + 1)) || true
wait "$S2" && STEADY_OK=$((STEADY_OK + 1)) || true
ELAPSED=$(($(date +%s) - START))

echo "GPU ${GPU_INDEX}: ${GPU_NAME}, compute capability ${CC}, ${TOTAL_MIB} MiB"
echo "MPS: replicas ${REPLICAS}, pinned-memory cap ${CAP_MIB} MiB per client, active threads ${THREADS}%"
echo "clients: UID ${CLIENT_UID}; steady ${STEADY_MIB} MiB each, greedy asked ${GREEDY_MIB} MiB"
for f in steady-1 steady-2 greedy raiser; do sed "s/^/  /" "$ROOT/$f.txt" 2>/dev/null || true; done
echo "pipe directory: $(stat -c '%A %U' "$PIPE"); server log:"
sed 's/^/  /' "$LOG/server.log" 2>/dev/null | tail -n 5 || true
echo "elapsed: ${ELAPSED}s"

read -r _ greedy_result greedy_mib <<<"${GREEDY:-greedy none 0}"
if [ "$greedy_result" != "oom" ]; then
  echo "FAIL: the greedy client was not stopped at its cap (${greedy_result}, ${greedy_mib} MiB)"
  exit 1
fi
if [ "$STEADY_OK" -ne 2 ] || ! grep -q "done" "$ROOT/steady-1.txt" || ! grep -q "done" "$ROOT/steady-2.txt"; then
  echo "FAIL: ${STEADY_OK}/2 steady clients finished after the greedy client's OOM"
  exit 1
fi
read -r _ raiser_result raiser_mib <<<"${RAISER:-raiser none 0}"
if [ "$raiser_result" != "oom" ]; then
  echo "FAIL: a client that set CUDA_MPS_PINNED_DEVICE_MEM_LIMIT itself got past the cap (${raiser_mib} MiB)"
  exit 1
fi
echo "PASS: the greedy client got CUDA_ERROR_OUT_OF_MEMORY at ${greedy_mib} MiB (cap ${CAP_MIB} MiB); both others kept running"
