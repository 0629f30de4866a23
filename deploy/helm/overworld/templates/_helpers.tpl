{{/* The release's name prefix. */}}
{{- define "overworld.name" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "overworld.labels" -}}
app.kubernetes.io/name: overworld
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The image reference. */}}
{{- define "overworld.image" -}}
{{ printf "%s:%s" .Values.image.repository (toString .Values.image.tag) }}
{{- end -}}

{{/* The node groups, as YAML ("groups": a list): the rendezvous (a
one-replica Fleet whose node has a fixed ID and a certificate issued by
hand) and one per region (a Fleet whose game servers enroll with the
control plane for IDs first…last). It fails on values that cannot make a
cluster, naming the problem (a control plane with no region with a site
needs 2 [[nodes]] in controlPlane.config). */}}
{{- define "overworld.groups" -}}
{{- $rv := .Values.rendezvous -}}
{{- if not (kindIs "map" $rv) }}{{ fail "rendezvous: want {region, nodeID}" }}{{ end -}}
{{- $rvID := int (required "rendezvous.nodeID is required" $rv.nodeID) -}}
{{- $found := false -}}
{{- range .Values.regions }}{{ if eq .name $rv.region }}{{ $found = true }}{{ end }}{{ end -}}
{{- if not $found }}{{ fail (printf "rendezvous.region %q: no region of that name" $rv.region) }}{{ end -}}
{{- if and .Values.regions (not .Values.controlPlane.enabled) }}{{ fail "regions: their game servers enroll with the control plane: controlPlane.enabled must be true" }}{{ end -}}
{{- $seen := list -}}
groups:
  - fleet: rendezvous
    region: {{ $rv.region | quote }}
    rendezvous: true
    replicas: 1
    id: {{ $rvID }}
{{- range .Values.regions }}
{{- $name := required "regions[].name is required" .name -}}
{{- if eq $name "rendezvous" }}{{ fail "regions[].name \"rendezvous\": the name of the rendezvous' Fleet" }}{{ end -}}
{{- $ids := required (printf "regions[%s].nodeIDs {first, last} is required (the IDs its game servers enroll for)" $name) .nodeIDs -}}
{{- $first := int (required (printf "regions[%s].nodeIDs.first is required" $name) $ids.first) -}}
{{- $last := int (required (printf "regions[%s].nodeIDs.last is required" $name) $ids.last) -}}
{{- if or (lt $first 1) (lt $last $first) (gt $last 32767) }}{{ fail (printf "regions[%s].nodeIDs %d…%d: want 1 ≤ first ≤ last ≤ 32767" $name $first $last) }}{{ end -}}
{{- if and (ge $rvID $first) (le $rvID $last) }}{{ fail (printf "regions[%s].nodeIDs %d…%d hold the rendezvous' ID %d" $name $first $last $rvID) }}{{ end -}}
{{- range $seen }}{{ if and (le (index . 1) $last) (ge (index . 2) $first) }}{{ fail (printf "regions[%s].nodeIDs %d…%d overlap regions[%s]'s %d…%d" $name $first $last (index . 0) (index . 1) (index . 2)) }}{{ end }}{{ end -}}
{{- $seen = append $seen (list $name $first $last) }}
{{- $min := int (ternary $.Values.autoscaler.minReplicas .minReplicas (kindIs "invalid" .minReplicas)) -}}
{{- $max := int (ternary $.Values.autoscaler.maxReplicas .maxReplicas (kindIs "invalid" .maxReplicas)) -}}
{{- if or (lt $min 0) (lt $max 1) (lt $max $min) }}{{ fail (printf "regions[%s] replicas %d…%d (minReplicas, maxReplicas): want 0 ≤ min ≤ max, max ≥ 1" $name $min $max) }}{{ end -}}
{{- if and .site (not (kindIs "string" .site)) }}{{ fail (printf "regions[%s].site: want a WonderNetwork city name" $name) }}{{ end }}
  - fleet: {{ $name | quote }}
    region: {{ $name | quote }}
    rendezvous: false
    replicas: {{ .replicas | default 1 }}
    id: {{ $first }}
    first: {{ $first }}
    last: {{ $last }}
    site: {{ .site | default "" | quote }}
    min: {{ $min }}
    max: {{ $max }}
{{- end }}
{{- $sited := false -}}
{{- range .Values.regions }}{{ if .site }}{{ $sited = true }}{{ end }}{{ end -}}
{{- $listed := len (regexFindAll "(?m)^\\s*\\[\\[nodes\\]\\]" .Values.controlPlane.config -1) -}}
{{- if and .Values.controlPlane.enabled (not $sited) (lt $listed 2) }}{{ fail (printf "controlPlane.config lists %d [[nodes]] and no region has a site: the control plane would have no placement targets (give a region a site, whose game servers become its targets, or list at least 2 [[nodes]])" $listed) }}{{ end -}}
{{- end -}}

{{/* The control plane's URL, as the game servers reach it. */}}
{{- define "overworld.planeURL" -}}
http://{{ include "overworld.name" . }}-control.{{ .Release.Namespace }}.svc:{{ .Values.controlPlane.httpPort }}
{{- end -}}
