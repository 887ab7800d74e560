{{- define "lib.name" -}}{{ .Release.Name }}{{- end }}
