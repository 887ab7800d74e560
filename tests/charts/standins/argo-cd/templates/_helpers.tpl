{{- /* Stands in for templates/_helpers.tpl and _common.tpl: names, selector labels and the anti-affinity preset. */ -}}
{{- define "argo-cd.fullname" -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- /* (dict "context" $ "name" <component name>) */ -}}
{{- define "argo-cd.selectorLabels" -}}
app.kubernetes.io/name: {{ default .context.Chart.Name .context.Values.nameOverride }}-{{ .name }}
app.kubernetes.io/instance: {{ .context.Release.Name }}
{{- end -}}

{{- /* (dict "context" $ "component" <values>): the component's affinity, else the preset. */ -}}
{{- define "argo-cd.affinity" -}}
{{- with .component.affinity -}}
{{- toYaml . -}}
{{- else -}}
{{- $preset := .context.Values.global.affinity.podAntiAffinity -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (dict "app.kubernetes.io/name" (printf "%s-%s" .context.Values.nameOverride .component.name))) -}}
{{- if eq $preset "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        {{- toYaml $term | nindent 8 }}
{{- else if eq $preset "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - {{- toYaml $term | nindent 6 }}
{{- end }}
{{- end -}}
{{- end -}}

{{- /* The components: (values key, kind, whether it exists, whether `replicas` is a value). */ -}}
{{- define "argo-cd.components" -}}
- {key: controller, kind: StatefulSet, enabled: true, scalable: true}
- {key: server, kind: Deployment, enabled: true, scalable: true}
- {key: repoServer, kind: Deployment, enabled: true, scalable: true}
- {key: applicationSet, kind: Deployment, enabled: true, scalable: true}
- {key: redis, kind: Deployment, enabled: {{ and .Values.redis.enabled (not (index .Values "redis-ha").enabled) }}, scalable: false}
- {key: dex, kind: Deployment, enabled: {{ .Values.dex.enabled }}, scalable: false}
- {key: notifications, kind: Deployment, enabled: {{ .Values.notifications.enabled }}, scalable: false}
{{- end -}}
