{{/*
The installation's name: the release name when it already says stsresize (helm install
stsresize ... gives the kustomize overlays' names), else <release>-stsresize.
*/}}
{{- define "stsresize.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "stsresize" .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "stsresize.name" -}}
{{- default "stsresize" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What every object carries. */}}
{{- define "stsresize.labels" -}}
app.kubernetes.io/name: {{ include "stsresize.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: stsresize
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The controller's pods, selected by the Deployment, Service, NetworkPolicy and PDB. */}}
{{- define "stsresize.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stsresize.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "stsresize.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The rules of the first document of a file under files/ (a link to the kustomize file that
states them, with a comment per rule on the code that needs it), as YAML.
  include "stsresize.rulesOf" (list . "files/cluster-rbac.yaml")
*/}}
{{- define "stsresize.rulesOf" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $first := first (regexSplit "(?m)^---[ \t]*$" ($root.Files.Get $file) -1) | fromYaml -}}
{{- if not $first.rules -}}
{{- fail (printf "%s: no rules in its first document (is the link to the kustomize file broken?)" $file) -}}
{{- end -}}
{{- toYaml $first.rules -}}
{{- end -}}

{{/* Values that cannot work together, refused with the reason. */}}
{{- define "stsresize.validate" -}}
{{- if and (not .Values.leaderElection.enabled) (gt (int .Values.replicaCount) 1) -}}
{{- fail (printf "replicaCount %d with leaderElection.enabled=false: replicas without a Lease would all act on the same StatefulSets; set replicaCount=1 or enable leader election" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if and .Values.journal.persistence.enabled (gt (int .Values.replicaCount) 1) -}}
{{- fail (printf "replicaCount %d with journal.persistence.enabled=true: one ReadWriteOnce claim and one SQLite file take one replica; set replicaCount=1" (int .Values.replicaCount)) -}}
{{- end -}}
{{- end -}}
