{{- define "web.name" -}}
{{ default .Chart.Name .Values.nameOverride }}
{{- end }}
{{- define "web.selector" -}}
app.kubernetes.io/name: {{ include "web.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "web.podLabels" -}}
{{- toYaml (merge (fromYaml (include "web.selector" .)) .Values.podLabels) }}
{{- end }}
{{- define "web.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}{{ .Release.Name }}{{ else }}{{ .Release.Name }}-{{ .Chart.Name }}{{ end }}
{{- end }}
