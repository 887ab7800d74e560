{{- /* Stands in for templates/_helpers.tpl: names, selector labels `<chart>[-webhook|-cert-controller]`, and which components exist. */ -}}
{{- define "external-secrets.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /* (list $ "<suffix>"): selector labels; the suffix is "" for the controller. */ -}}
{{- define "external-secrets.selector" -}}
{{- $root := index . 0 -}}{{- $suffix := index . 1 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}{{ $suffix }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{- /* The components as (suffix, values, created): controller, webhook, cert-controller. */ -}}
{{- define "external-secrets.components" -}}
- {suffix: "", key: "", created: {{ .Values.createOperator }}}
- {suffix: "-webhook", key: webhook, created: {{ .Values.webhook.create }}}
- {suffix: "-cert-controller", key: certController, created: {{ and .Values.certController.create (not .Values.webhook.certManager.enabled) }}}
{{- end -}}
