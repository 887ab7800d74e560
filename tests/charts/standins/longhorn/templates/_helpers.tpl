{{- /* Stands in for templates/_helpers.tpl: longhorn.labels, and a user-deployed component's placement (its own value, else global.*). */ -}}
{{- define "longhorn.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion }}
{{- end -}}

{{- /* (list $ <component values>): tolerations and nodeSelector, each falling back to global. */ -}}
{{- define "longhorn.placement" -}}
{{- $root := index . 0 -}}{{- $v := index . 1 -}}
{{- with default $root.Values.global.tolerations $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with default $root.Values.global.nodeSelector $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
