{{/* The name of the release's objects. */}}
{{- define "lossaudit.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lossaudit.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "lossaudit.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "lossaudit.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret's name, or "" without one. */}}
{{- define "lossaudit.secretName" -}}
{{- if .Values.secret.create -}}
{{ include "lossaudit.fullname" . }}
{{- else -}}
{{ .Values.secret.existingSecret }}
{{- end -}}
{{- end -}}

{{/* Paths inside the pods: the volumes are mounted there, and audit.yaml names them. */}}
{{- define "lossaudit.paths" -}}
config: /etc/lossaudit
secret: /etc/lossaudit-secret
state: /var/lib/lossaudit
{{- end -}}

{{/* audit.yaml: the values' config with the chart's paths. */}}
{{- define "lossaudit.auditYAML" -}}
{{- $p := include "lossaudit.paths" . | fromYaml -}}
{{- $set := dict
  "store" (dict "dir" (printf "%s/store" $p.state))
  "report" (dict
    "csv" (printf "%s/loss-report.csv" $p.state)
    "json" (printf "%s/report.json" $p.state)
    "html" (printf "%s/report.html" $p.state))
  "watch" (dict "listen" (printf "0.0.0.0:%v" .Values.watch.service.port) "interval" .Values.watch.interval "log_format" .Values.watch.logFormat) -}}
{{- if and (include "lossaudit.secretName" .) (or .Values.secret.hasClientProperties (and .Values.secret.create .Values.secret.clientProperties)) -}}
{{- $_ := set $set "kafka" (dict "client_properties" (printf "%s/client.properties" $p.secret)) -}}
{{- end -}}
{{- if include "lossaudit.webConfig" . -}}
{{- $_ := set $set.watch "web_config_file" (printf "%s/web-config.yml" $p.secret) -}}
{{- end -}}
{{- mergeOverwrite (deepCopy .Values.config) $set | toYaml -}}
{{- end -}}

{{/* "true" when the Secret holds watch's web configuration. */}}
{{- define "lossaudit.webConfig" -}}
{{- if and (include "lossaudit.secretName" .) (or .Values.secret.hasWebConfig (and .Values.secret.create .Values.secret.webConfig)) -}}
true
{{- end -}}
{{- end -}}

{{/* The container's volume mounts, env and security, shared by the CronJob and the Deployment. */}}
{{- define "lossaudit.container" -}}
{{- $p := include "lossaudit.paths" . | fromYaml -}}
image: {{ include "lossaudit.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- if include "lossaudit.secretName" . }}
env:
  {{- include "lossaudit.secretEnv" . | nindent 2 }}
{{- end }}
{{ include "lossaudit.mounts" . }}
{{- end -}}

{{/* The registry's credentials from the Secret, as env entries. */}}
{{- define "lossaudit.secretEnv" -}}
- name: LOSSAUDIT_SCHEMA_REGISTRY_USERNAME
  valueFrom: {secretKeyRef: {name: {{ include "lossaudit.secretName" . }}, key: registry-username, optional: true}}
- name: LOSSAUDIT_SCHEMA_REGISTRY_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ include "lossaudit.secretName" . }}, key: registry-password, optional: true}}
{{- end -}}

{{/* The container's volume mounts. */}}
{{- define "lossaudit.mounts" -}}
{{- $p := include "lossaudit.paths" . | fromYaml -}}
volumeMounts:
  - {name: config, mountPath: {{ $p.config }}, readOnly: true}
  - {name: state, mountPath: {{ $p.state }}}
  - {name: tmp, mountPath: /tmp}
{{- if include "lossaudit.secretName" . }}
  - {name: secret, mountPath: {{ $p.secret }}, readOnly: true}
{{- end }}
{{- end -}}

{{- define "lossaudit.volumes" -}}
- name: config
  configMap: {name: {{ include "lossaudit.fullname" .root }}}
- name: state
{{- if .claim }}
  persistentVolumeClaim: {claimName: {{ .claim }}}
{{- else }}
  emptyDir: {}
{{- end }}
- name: tmp
  emptyDir: {}
{{- if include "lossaudit.secretName" .root }}
- name: secret
  secret: {secretName: {{ include "lossaudit.secretName" .root }}}
{{- end }}
{{- end -}}

{{- define "lossaudit.pvc" -}}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ include "lossaudit.fullname" .root }}-{{ .component }}
  labels:
    {{- include "lossaudit.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  accessModes: {{ toYaml .p.accessModes | nindent 4 }}
  {{- if .p.storageClass }}
  storageClassName: {{ .p.storageClass }}
  {{- end }}
  resources:
    requests:
      storage: {{ .p.size }}
{{- end -}}
