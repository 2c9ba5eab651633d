#!/usr/bin/env bash
# Operator end to end on a real kind cluster (needs Docker, kind, kubectl): a simulator Model gets
# real pods, the endpointslice controller marks them ready, the operator catalogues the pod IPs,
# and deleting the Model lets the garbage collector remove the Deployment. The operator runs
# outside the cluster against kind's kubeconfig, with a throwaway redis-server.
# KEEP=1 keeps the cluster afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
for c in docker kind kubectl redis-server redis-cli; do
  command -v "$c" >/dev/null || { echo "e2e-kind needs $c on PATH" >&2; exit 1; }
done
NAME=${KIND_CLUSTER:-modelplane-e2e}
IMAGE=ghcr.io/modelplane/simulator:dev
WORK=$(mktemp -d)
KUBECONFIG="$WORK/kubeconfig"; export KUBECONFIG
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ "${KEEP:-0}" = 1 ] || kind delete cluster --name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }

step "kind cluster $NAME"
kind get clusters | grep -qx "$NAME" || kind create cluster --name "$NAME" --wait 120s
kind get kubeconfig --name "$NAME" > "$KUBECONFIG"

step "simulator image"
docker build -q -f test/k8s/simulator.Dockerfile -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$NAME"

step "CRD"
kubectl apply --server-side -f crds/model.yaml
kubectl wait --for=condition=Established crd/models.modelplane.dev --timeout=60s

step "redis + operator"
REDIS_PORT=$(node -e "const s=require('net').createServer().listen(0,()=>{console.log(s.address().port);s.close()})")
redis-server --port "$REDIS_PORT" --save '' --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
REDIS_URL="redis://127.0.0.1:$REDIS_PORT" OPERATOR_PORT=0 LOG_LEVEL=info \
  npx tsx operator/main.ts --runtime kubernetes >"$WORK/operator.log" 2>&1 &
PIDS+=($!)

step "a simulator Model becomes Ready with real pods"
kubectl apply -f - <<'YAML'
apiVersion: modelplane.dev/v1alpha1
kind: Model
metadata: { name: sim-chat, namespace: default }
spec:
  id: E2E/Sim-Chat
  kind: chat
  engine: { type: simulator, replicas: 2 }
  pricing: { USD: { input: "0.1", output: "0.2" } }
YAML
kubectl wait model/sim-chat --for=condition=Ready --timeout=300s
kubectl get models
ENTRY=$(redis-cli -p "$REDIS_PORT" hget mp:catalogue e2e/sim-chat)
echo "$ENTRY"
URL=$(node -e 'const e=JSON.parse(process.argv[1]); if (e.endpoints.length !== 2) process.exit(1); console.log(e.endpoints[0].url)' "$ENTRY")
# Pod IPs on kind's Docker bridge are reachable from a Linux host.
curl -fsS "$URL/v1/models" | grep -q 'E2E/Sim-Chat'

step "delete: entry removed, Deployment garbage-collected"
kubectl delete model sim-chat --wait=true --timeout=60s
[ -z "$(redis-cli -p "$REDIS_PORT" hget mp:catalogue e2e/sim-chat)" ]
for _ in $(seq 60); do kubectl get deploy model-sim-chat >/dev/null 2>&1 || break; sleep 1; done
! kubectl get deploy model-sim-chat >/dev/null 2>&1
step "e2e-kind passed"
