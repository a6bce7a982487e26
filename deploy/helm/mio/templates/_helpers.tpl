{{- define "mio.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mio.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "mio.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "mio.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mio.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mio.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mio.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "mio.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "mio.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* mio.validate fails the render on values that cannot work. */}}
{{- define "mio.validate" -}}
{{- $_ := required "existingSecret.name is required: secrets are never chart values (see docs/deploy.md)" .Values.existingSecret.name -}}
{{- $_ := required "existingSecret.databaseURLKey is required" .Values.existingSecret.databaseURLKey -}}
{{- $_ := required "existingSecret.masterKeyKey is required" .Values.existingSecret.masterKeyKey -}}
{{- range $k, $v := .Values.config -}}
{{- if has $k (list "MIO_DATABASE_URL" "DATABASE_URL" "MIO_DATABASE_LISTEN_URL" "MIO_MASTER_KEY" "MIO_NATS_URL") -}}
{{- fail (printf "config.%s is a secret: put it in existingSecret, not in values" $k) -}}
{{- end -}}
{{- if has $k (list "MIO_ROLE" "MIO_HTTP_ADDR" "MIO_ADMIN_ADDR") -}}
{{- fail (printf "config.%s is set by the chart (roles and ports)" $k) -}}
{{- end -}}
{{- if not (hasPrefix "MIO_" $k) -}}
{{- fail (printf "config.%s: only MIO_* settings belong in config" $k) -}}
{{- end -}}
{{- end -}}
{{- if gt (int .Values.bridge.replicas) 1 -}}
{{- fail "bridge.replicas must be 0 or 1" -}}
{{- end -}}
{{- if and (gt (int .Values.bridge.replicas) 0) (not .Values.existingSecret.natsURLKey) -}}
{{- fail "bridge.replicas 1 needs existingSecret.natsURLKey (MIO_NATS_URL)" -}}
{{- end -}}
{{- end -}}

{{/*
mio.secretEnv: the secrets, only as references to existingSecret, each
to the containers that need it. Argument: dict with "root", "migrate"
(the migration's own database URL), "masterKey" (the serving roles: also
the listen URL) and "nats" (booleans).
*/}}
{{- define "mio.secretEnv" -}}
{{- $s := .root.Values.existingSecret -}}
- name: MIO_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $s.name }}
      key: {{ ternary (default $s.databaseURLKey $s.migrationDatabaseURLKey) $s.databaseURLKey (eq .migrate true) }}
{{- if .masterKey }}
- name: MIO_MASTER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $s.name }}
      key: {{ $s.masterKeyKey }}
{{- end }}
{{- if and .masterKey $s.databaseListenURLKey }}
- name: MIO_DATABASE_LISTEN_URL
  valueFrom:
    secretKeyRef:
      name: {{ $s.name }}
      key: {{ $s.databaseListenURLKey }}
{{- end }}
{{- if and .nats $s.natsURLKey }}
- name: MIO_NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $s.name }}
      key: {{ $s.natsURLKey }}
{{- end }}
{{- end -}}

{{/* mio.podSecurity: pod-level security shared by every pod. */}}
{{- define "mio.podSecurity" -}}
automountServiceAccountToken: false
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/*
mio.deployment renders one role's Deployment. Argument: dict with
"root" (the chart context), "role" and "values" (the role's values).
api pods serve the public listener and are probed there; worker and
bridge pods only have the admin listener.
*/}}
{{- define "mio.deployment" -}}
{{- $root := .root -}}
{{- $role := .role -}}
{{- $v := .values -}}
{{- $probePort := ternary "http" "admin" (eq $role "api") -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "mio.fullname" $root }}-{{ $role }}
  labels:
    {{- include "mio.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $role }}
spec:
  {{- if not (and (eq $role "api") $v.autoscaling.enabled) }}
  replicas: {{ $v.replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "mio.selectorLabels" $root | nindent 6 }}
      app.kubernetes.io/component: {{ $role }}
  template:
    metadata:
      labels:
        {{- include "mio.selectorLabels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ $role }}
      annotations:
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- include "mio.podSecurity" $root | nindent 6 }}
      terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
      containers:
        - name: mio
          image: {{ include "mio.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [serve, --role, {{ $role }}]
          ports:
            {{- if eq $role "api" }}
            - name: http
              containerPort: {{ $root.Values.ports.http }}
              protocol: TCP
            {{- end }}
            - name: admin
              containerPort: {{ $root.Values.ports.admin }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "mio.fullname" $root }}
          env:
            {{- include "mio.secretEnv" (dict "root" $root "migrate" false "masterKey" true "nats" (eq $role "bridge")) | nindent 12 }}
          livenessProbe:
            httpGet:
              path: /livez
              port: {{ $probePort }}
            {{- toYaml $root.Values.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: {{ $probePort }}
            {{- toYaml $root.Values.probes.readiness | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: data
              mountPath: /var/lib/mio
      volumes:
        - name: tmp
          emptyDir: {}
        - name: data
          emptyDir: {}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
