{{- /* Stands in for templates/_helpers.tpl: names (`<release>-webhook`, ...) and each component's selector labels. */ -}}
{{- define "cert-manager.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /* (list $ "<component>"): the component's object name. */ -}}
{{- define "cert-manager.component-fullname" -}}
{{- $root := index . 0 -}}{{- $component := index . 1 -}}
{{- if eq $component "controller" -}}
{{- include "cert-manager.fullname" $root -}}
{{- else -}}
{{- printf "%s-%s" (include "cert-manager.fullname" $root | trunc 52 | trimSuffix "-") $component -}}
{{- end -}}
{{- end -}}

{{- /* (list $ "<component>"): app.kubernetes.io/name is the chart name for the controller, the component's name otherwise. */ -}}
{{- define "cert-manager.selector" -}}
{{- $root := index . 0 -}}{{- $component := index . 1 -}}
app.kubernetes.io/name: {{ eq $component "controller" | ternary $root.Chart.Name $component }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ $component | quote }}
{{- end -}}
