{{/* Names and labels shared by every template. */}}
{{- define "modelplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "modelplane.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "modelplane.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "modelplane.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries (with its instance); the NetworkPolicies select "our pods" by part-of + instance. */}}
{{- define "modelplane.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: modelplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "modelplane.labels" -}}
{{ include "modelplane.commonLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "proxy"). */}}
{{- define "modelplane.selector" -}}
app.kubernetes.io/name: {{ include "modelplane.name" .ctx }}-{{ .component }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* A component's labels: the common ones and its selector (which holds the instance). */}}
{{- define "modelplane.componentLabels" -}}
{{ include "modelplane.commonLabels" .ctx }}
{{ include "modelplane.selector" . }}
{{- end -}}

{{- define "modelplane.image" -}}
{{- printf "%s/%s:%s" .ctx.Values.image.registry .name (default .ctx.Chart.AppVersion .ctx.Values.image.tag) -}}
{{- with (get (.ctx.Values.image.digests | default dict) .name) }}@{{ . }}{{ end -}}
{{- end -}}

{{/*
The container security context every container runs with: non-root, read-only root filesystem,
no privilege escalation, no capabilities. Writable paths are volumes.
*/}}
{{- define "modelplane.containerSecurity" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The pod security context; uid is the image's non-root user. */}}
{{- define "modelplane.podSecurity" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
fsGroup: {{ .uid }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "modelplane.kekSecret" -}}
{{- default (printf "%s-kek" (include "modelplane.fullname" .)) .Values.kek.existingSecret -}}
{{- end -}}

{{- define "modelplane.redisSecret" -}}
{{- if and (eq .Values.redis.mode "external") .Values.redis.external.existingSecret -}}
{{- .Values.redis.external.existingSecret -}}
{{- else -}}
{{- printf "%s-redis-url" (include "modelplane.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "modelplane.consoleSecret" -}}
{{- default (printf "%s-console" (include "modelplane.fullname" .)) .Values.console.secrets.existingSecret -}}
{{- end -}}

{{/* The environment every service shares: Redis, the KEK, brand, log level. */}}
{{- define "modelplane.commonEnv" -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "modelplane.redisSecret" . }}
      key: url
- name: MODELPLANE_KEK
  valueFrom:
    secretKeyRef:
      name: {{ include "modelplane.kekSecret" . }}
      key: kek
- name: MODELPLANE_BRAND
  value: {{ .Values.brand | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.journal.databaseUrl.existingSecret }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.journal.databaseUrl.key }}
{{- end }}
{{- end -}}

{{/* Extra NAME: value pairs from values (proxy.env, console.env). */}}
{{- define "modelplane.extraEnv" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end -}}
{{- end -}}

{{/* Where the proxy serves /metrics: its own port when set, else the API port. */}}
{{- define "modelplane.proxyMetricsPort" -}}
{{- .Values.proxy.metrics.port -}}
{{- end -}}

{{/* Pod scheduling knobs of one component's values. */}}
{{- define "modelplane.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The proxy's public origin: proxy.publicUrl, else its Service's in-cluster address. */}}
{{- define "modelplane.proxyPublicUrl" -}}
{{- default (printf "http://%s-proxy.%s.svc:%v" (include "modelplane.fullname" .) .Release.Namespace .Values.proxy.service.port) .Values.proxy.publicUrl -}}
{{- end -}}

{{/*
The console's API address (CONSOLE_API_BASE_URL): console.apiBaseUrl, else proxy.publicUrl + /v1,
else empty (the console's own default). Set proxy.publicUrl and the console follows.
*/}}
{{- define "modelplane.consoleApiBaseUrl" -}}
{{- if .Values.console.apiBaseUrl -}}
{{- .Values.console.apiBaseUrl -}}
{{- else if .Values.proxy.publicUrl -}}
{{- printf "%s/v1" (trimSuffix "/" .Values.proxy.publicUrl) -}}
{{- end -}}
{{- end -}}

{{/*
Browser origins the proxy allows (PROXY_CORS_ORIGINS): proxy.corsOrigins, else the console's
origin (scheme://host of console.publicUrl) when the console is on, so its Playground can call the
API. Set console.publicUrl and the proxy follows.
*/}}
{{- define "modelplane.proxyCorsOrigins" -}}
{{- if .Values.proxy.corsOrigins -}}
{{- .Values.proxy.corsOrigins -}}
{{- else if and .Values.console.enabled .Values.console.publicUrl -}}
{{- $u := urlParse .Values.console.publicUrl -}}
{{- printf "%s://%s" $u.scheme $u.host -}}
{{- end -}}
{{- end -}}

{{/* An ingress's host: its own host value, else the host of the public URL it serves. */}}
{{- define "modelplane.ingressHost" -}}
{{- $host := .host -}}
{{- if and (not $host) .publicUrl -}}
{{- $host = (urlParse .publicUrl).hostname -}}
{{- end -}}
{{- required (printf "%s.host (or %s) is required with %s.enabled" .what .publicUrlName .what) $host -}}
{{- end -}}

{{/*
What decides where every part keeps its money: the Redis URL (or the Secret naming it) and the
journal's Secret. A pod template annotation of its hash rolls every part when any of them changes,
so no part stays on the old stores (a Secret of yours whose content changes needs a restart).
*/}}
{{- define "modelplane.storesChecksum" -}}
{{- $r := .Values.redis -}}
{{- list $r.mode $r.external.url $r.external.existingSecret .Values.journal.databaseUrl | toJson | sha256sum | trunc 16 -}}
{{- end -}}

{{/*
The media store's environment (MEDIA_STORE and friends), one definition for the proxy, which
writes generated media and batch files, and the console, which serves batch output and error
files from the same store: two copies would drift, and a console on another store answers 404.
*/}}
{{- define "modelplane.mediaEnv" -}}
- name: MEDIA_STORE
  value: {{ .Values.media.store | quote }}
{{- if eq .Values.media.store "fs" }}
- name: MEDIA_DIR
  value: /var/lib/modelplane/media
{{- else }}
{{- with .Values.media.s3 }}
- name: S3_BUCKET
  value: {{ required "media.s3.bucket is required with media.store s3" .bucket | quote }}
- name: S3_REGION
  value: {{ .region | quote }}
{{- with .endpoint }}
- name: S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- with .prefix }}
- name: S3_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- with .existingSecret }}
- name: S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: { name: {{ . }}, key: accessKeyId }
- name: S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: { name: {{ . }}, key: secretAccessKey }
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

