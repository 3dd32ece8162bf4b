package htmlcheck

import "strings"

// The rules below say how each feature of the data set shows in an email's
// HTML: which elements, attributes, CSS properties, values, at-rules and
// selectors name it. They are Catchbox's own reading of each feature's title
// and test; a feature of the data set that no rule names (BIMI, which is a
// DNS record, or HDR images, which a file name does not tell) is never
// reported. TestRulesNameFeaturesOfTheData keeps every slug here in the data.

// elementRules are the features an element's presence shows.
var elementRules = map[string][]string{
	"abbr": {"html-abbr"}, "acronym": {"html-acronym"}, "address": {"html-address"}, "audio": {"html-audio"},
	"base": {"html-base"}, "bdi": {"html-bdi"}, "blockquote": {"html-blockquote"}, "body": {"html-body"},
	"code": {"html-code"}, "del": {"html-del"}, "dfn": {"html-dfn"}, "dialog": {"html-dialog"}, "div": {"html-div"},
	"form": {"html-form"}, "hr": {"html-hr"}, "img": {"html-img"}, "link": {"html-link"},
	"h1": {"html-h1-h6"}, "h2": {"html-h1-h6"}, "h3": {"html-h1-h6"}, "h4": {"html-h1-h6"}, "h5": {"html-h1-h6"}, "h6": {"html-h1-h6"},
	"ul": {"html-lists"}, "ol": {"html-lists"}, "dl": {"html-lists"},
	"map": {"html-image-maps"}, "area": {"html-image-maps"},
	"marquee": {"html-marquee"}, "meter": {"html-meter"}, "object": {"html-object"}, "p": {"html-p"},
	"picture": {"html-picture"}, "pre": {"html-pre"}, "progress": {"html-progress"}, "rp": {"html-rp"},
	"rt": {"html-rt"}, "ruby": {"html-ruby"}, "select": {"html-select"}, "small": {"html-small"},
	"span": {"html-span"}, "strike": {"html-strike"}, "strong": {"html-strong"}, "style": {"html-style"},
	"svg": {"html-svg"}, "table": {"html-table"}, "textarea": {"html-textarea"}, "video": {"html-video"}, "wbr": {"html-wbr"},
	"article": {"html-semantics"}, "aside": {"html-semantics"}, "details": {"html-semantics"}, "figcaption": {"html-semantics"},
	"figure": {"html-semantics"}, "footer": {"html-semantics"}, "header": {"html-semantics"}, "main": {"html-semantics"},
	"mark": {"html-semantics"}, "nav": {"html-semantics"}, "section": {"html-semantics"}, "summary": {"html-semantics"},
	"time": {"html-semantics"},
}

// attributeRules are the features an attribute shows, on any element.
var attributeRules = map[string][]string{
	"align": {"html-align"}, "valign": {"html-valign"}, "background": {"html-background"},
	"cellpadding": {"html-cellpadding"}, "cellspacing": {"html-cellspacing"}, "dir": {"html-dir"},
	"width": {"html-width"}, "height": {"html-height"}, "hidden": {"html-hidden"}, "lang": {"html-lang"},
	"loading": {"html-loading-attribute"}, "required": {"html-required"}, "role": {"html-role"},
	"srcset": {"html-srcset"}, "sizes": {"html-srcset"}, "target": {"html-target"}, "popover": {"html-popover"},
	"inert": {"css-inert-attribute"}, "usemap": {"html-image-maps"},
	"aria-describedby": {"html-aria-describedby"}, "aria-hidden": {"html-aria-hidden"}, "aria-label": {"html-aria-label"},
	"aria-labelledby": {"html-aria-labelledby"}, "aria-live": {"html-aria-live"},
	"amp4email": {"amp"}, "⚡4email": {"amp"},
}

// inputTypes and buttonTypes are the form controls the data set tests, by
// their type attribute (an input without one is text, a button submit).
var (
	inputTypes  = map[string]string{"checkbox": "html-input-checkbox", "hidden": "html-input-hidden", "radio": "html-input-radio", "reset": "html-input-reset", "submit": "html-input-submit", "text": "html-input-text"}
	buttonTypes = map[string]string{"reset": "html-button-reset", "submit": "html-button-submit"}
)

// imageFormats are the image features an <img> source shows by its file
// name's extension.
var imageFormats = map[string]string{
	"png": "image-png", "apng": "image-apng", "jpg": "image-jpg", "jpeg": "image-jpg", "gif": "image-gif",
	"webp": "image-webp", "avif": "image-avif", "bmp": "image-bmp", "ico": "image-ico", "tif": "image-tiff",
	"tiff": "image-tiff", "heif": "image-heif", "heic": "image-heif", "svg": "image-svg", "mp4": "image-mp4",
}

// propertyRules are the features a CSS property shows, whatever its value
// (vendor prefixes removed). display, flex-direction, flex-wrap and flex-flow
// are read with their values (valueRules).
var propertyRules = map[string][]string{}

func init() {
	same := strings.Fields(`accent-color align-items animation aspect-ratio backdrop-filter background-blend-mode
		background-clip background-color background-image background-origin background-position background-repeat
		background-size background border-collapse border-image border-radius border-spacing box-shadow box-sizing
		caption-side clear clip-path color-scheme column-count cursor direction empty-cells filter float font-kerning
		font-size-adjust font-size font-stretch font-weight height hyphenate-character hyphenate-limit-chars hyphens
		inline-size justify-content letter-spacing line-height list-style-image list-style-position list-style-type
		list-style mask-image max-block-size max-height max-inline-size max-width min-block-size min-height
		min-inline-size min-width mix-blend-mode object-fit object-position opacity orphans outline-offset outline
		overflow-wrap overflow padding position resize shape-margin shape-outside tab-size table-layout text-align-last
		text-align text-decoration-color text-decoration-line text-decoration-skip-ink text-decoration-style
		text-decoration-thickness text-decoration text-emphasis-position text-emphasis text-indent text-justify
		text-orientation text-overflow text-shadow text-transform text-underline-offset text-underline-position
		text-wrap transform transition user-select vertical-align visibility white-space-collapse white-space widows
		width word-break word-spacing word-wrap writing-mode z-index margin inset`)
	for _, p := range same {
		propertyRules[p] = append(propertyRules[p], "css-"+p)
	}
	group := func(slug string, props string) {
		for _, p := range strings.Fields(props) {
			propertyRules[p] = append(propertyRules[p], slug)
		}
	}
	group("css-animation", "animation-name animation-duration animation-delay animation-iteration-count animation-direction animation-fill-mode animation-play-state animation-timing-function")
	group("css-transition", "transition-property transition-duration transition-delay transition-timing-function")
	group("css-background-position", "background-position-x background-position-y")
	group("css-block-inline-size", "block-size inline-size")
	group("css-border-image", "border-image-source border-image-slice border-image-width border-image-outset border-image-repeat")
	group("css-border-inline-block", "border-inline border-block")
	group("css-border-inline-block-individual", `border-inline-color border-block-color border-inline-style border-block-style
		border-inline-width border-block-width border-inline-start border-inline-end border-block-start border-block-end`)
	group("css-border-inline-block-longhand", `border-inline-start-color border-block-start-color border-inline-start-style
		border-block-start-style border-inline-start-width border-block-start-width border-inline-end-color border-block-end-color
		border-inline-end-style border-block-end-style border-inline-end-width border-block-end-width`)
	group("css-border-radius-logical", "border-start-start-radius border-start-end-radius border-end-start-radius border-end-end-radius")
	group("css-border-radius", "border-top-left-radius border-top-right-radius border-bottom-left-radius border-bottom-right-radius")
	group("css-border", `border border-width border-style border-color border-top border-bottom border-left border-right
		border-top-width border-top-style border-top-color border-bottom-width border-bottom-style border-bottom-color
		border-left-width border-left-style border-left-color border-right-width border-right-style border-right-color`)
	group("css-column-layout-properties", "columns column-fill column-rule column-rule-color column-rule-style column-rule-width column-span column-width")
	group("css-font", "font")
	group("css-gap", "gap row-gap column-gap grid-gap grid-row-gap grid-column-gap")
	group("css-grid-template", "grid-template grid-template-areas grid-template-columns grid-template-rows")
	group("css-inset", "inset-block inset-inline inset-inline-start inset-inline-end inset-block-start inset-block-end")
	group("css-left-right-top-bottom", "left right top bottom")
	group("css-margin", "margin-left margin-right margin-top margin-bottom")
	group("css-margin-inline-block", "margin-inline margin-block")
	group("css-margin-block-start-end", "margin-block-start margin-block-end")
	group("css-margin-inline-start-end", "margin-inline-start margin-inline-end")
	group("css-padding", "padding-left padding-right padding-top padding-bottom")
	group("css-padding-inline-block", "padding-inline padding-block")
	group("css-padding-block-start-end", "padding-block-start padding-block-end")
	group("css-padding-inline-start-end", "padding-inline-start padding-inline-end")
	group("css-overflow", "overflow-x overflow-y overflow-block overflow-inline")
	group("css-outline", "outline-color outline-style outline-width")
	group("css-scroll-snap", "scroll-snap-type scroll-snap-align scroll-snap-stop")
	group("css-text-emphasis", "text-emphasis-color text-emphasis-style")
	group("css-mask-image", "mask")
}

// functionRules are the features a CSS function shows, in any value.
var functionRules = map[string]string{
	"linear-gradient": "css-linear-gradient", "repeating-linear-gradient": "css-linear-gradient",
	"radial-gradient": "css-radial-gradient", "repeating-radial-gradient": "css-radial-gradient",
	"conic-gradient": "css-conic-gradient", "repeating-conic-gradient": "css-conic-gradient",
	"clamp": "css-function-clamp", "min": "css-function-min", "max": "css-function-max",
	"light-dark": "css-function-light-dark", "calc": "css-unit-calc", "rgb": "css-rgb", "rgba": "css-rgba",
	"lch": "css-modern-color", "oklch": "css-modern-color", "lab": "css-modern-color", "oklab": "css-modern-color",
	"var": "css-variables", "fit-content": "css-intrinsic-size",
}

// keywordRules are the features a keyword shows, in any value.
var keywordRules = map[string]string{
	"initial": "css-unit-initial", "fit-content": "css-intrinsic-size", "min-content": "css-intrinsic-size",
	"max-content": "css-intrinsic-size", "system-ui": "css-sytem-ui", "ui-serif": "css-sytem-ui",
	"ui-sans-serif": "css-sytem-ui", "ui-rounded": "css-sytem-ui", "ui-monospace": "css-sytem-ui",
}

// unitRules are the features a dimension's unit shows.
var unitRules = map[string]string{
	"px": "css-unit-px", "em": "css-unit-em", "rem": "css-unit-rem", "ex": "css-unit-ex", "ch": "css-unit-ch",
	"cm": "css-unit-cm", "mm": "css-unit-mm", "in": "css-unit-in", "pc": "css-unit-pc", "pt": "css-unit-pt",
	"vh": "css-unit-vh", "vw": "css-unit-vw", "vmin": "css-unit-vmin", "vmax": "css-unit-vmax", "%": "css-unit-percent",
}

// atRules are the features an at-rule shows (vendor prefixes removed).
var atRules = map[string]string{
	"media": "css-at-media", "font-face": "css-at-font-face", "import": "css-at-import",
	"keyframes": "css-at-keyframes", "supports": "css-at-supports",
}

// mediaFeatureRules are the features a media query's feature shows: a
// feature whose name ends with the key ("min-device-pixel-ratio",
// "-webkit-min-device-pixel-ratio", "any-hover").
var mediaFeatureRules = []struct{ suffix, slug string }{
	{"device-pixel-ratio", "css-at-media-device-pixel-ratio"},
	{"hover", "css-at-media-hover"},
	{"orientation", "css-at-media-orientation"},
	{"prefers-color-scheme", "css-at-media-prefers-color-scheme"},
	{"prefers-reduced-motion", "css-at-media-prefers-reduced-motion"},
}

// pseudoRules are the features a pseudo-class or pseudo-element shows, by
// its name (with one colon or two: the data set's ::before is also the older
// :before).
var pseudoRules = map[string]string{
	"active": "css-pseudo-class-active", "checked": "css-pseudo-class-checked", "default": "css-pseudo-class-default",
	"first-child": "css-pseudo-class-first-child", "first-of-type": "css-pseudo-class-first-of-type",
	"focus-visible": "css-pseudo-class-focus-visible", "focus-within": "css-pseudo-class-focus-within",
	"focus": "css-pseudo-class-focus", "has": "css-pseudo-class-has", "hover": "css-pseudo-class-hover",
	"lang": "css-pseudo-class-lang", "last-child": "css-pseudo-class-last-child", "last-of-type": "css-pseudo-class-last-of-type",
	"link": "css-pseudo-class-link", "not": "css-pseudo-class-not", "nth-child": "css-pseudo-class-nth-child",
	"nth-last-child": "css-pseudo-class-nth-last-child", "nth-last-of-type": "css-pseudo-class-nth-last-of-type",
	"nth-of-type": "css-pseudo-class-nth-of-type", "only-child": "css-pseudo-class-only-child",
	"only-of-type": "css-pseudo-class-only-of-type", "target": "css-pseudo-class-target", "visited": "css-pseudo-class-visited",
	"after": "css-pseudo-element-after", "before": "css-pseudo-element-before", "first-letter": "css-pseudo-element-first-letter",
	"first-line": "css-pseudo-element-first-line", "marker": "css-pseudo-element-marker", "placeholder": "css-pseudo-element-placeholder",
}

// Features read from the shape of the HTML or CSS rather than a name.
const (
	slugDoctype         = "html-doctype"
	slugHTMLComments    = "html-comments"
	slugAnchorLinks     = "html-anchor-links"
	slugMailtoLinks     = "html-mailto-links"
	slugMetaColorScheme = "html-meta-color-scheme"
	slugBase64Image     = "image-base64"
	slugButtonSubmit    = "html-button-submit"
	slugInputText       = "html-input-text"

	slugCSSComments   = "css-comments"
	slugImportant     = "css-important"
	slugVariables     = "css-variables"
	slugNesting       = "css-nesting"
	slugDisplay       = "css-display"
	slugDisplayFlex   = "css-display-flex"
	slugDisplayGrid   = "css-display-grid"
	slugDisplayNone   = "css-display-none"
	slugFlexDirection = "css-flex-direction"
	slugFlexWrap      = "css-flex-wrap"

	slugSelectorAdjacent  = "css-selector-adjacent-sibling"
	slugSelectorAttribute = "css-selector-attribute"
	slugSelectorChaining  = "css-selector-chaining"
	slugSelectorChild     = "css-selector-child"
	slugSelectorClass     = "css-selector-class"
	slugSelectorDesc      = "css-selector-descendant"
	slugSelectorSibling   = "css-selector-general-sibling"
	slugSelectorGrouping  = "css-selector-grouping"
	slugSelectorID        = "css-selector-id"
	slugSelectorType      = "css-selector-type"
	slugSelectorUniversal = "css-selector-universal"
)

// ruleSlugs lists every slug the rules name, for the test that keeps them in
// the data set.
func ruleSlugs() []string {
	var out []string
	for _, m := range []map[string][]string{elementRules, attributeRules, propertyRules} {
		for _, ss := range m {
			out = append(out, ss...)
		}
	}
	for _, m := range []map[string]string{inputTypes, buttonTypes, imageFormats, functionRules, keywordRules, unitRules, atRules, pseudoRules} {
		for _, s := range m {
			out = append(out, s)
		}
	}
	for _, r := range mediaFeatureRules {
		out = append(out, r.slug)
	}
	return append(out, slugDoctype, slugHTMLComments, slugAnchorLinks, slugMailtoLinks, slugMetaColorScheme, slugBase64Image,
		slugButtonSubmit, slugInputText, slugCSSComments, slugImportant, slugVariables, slugNesting, slugDisplay, slugDisplayFlex,
		slugDisplayGrid, slugDisplayNone, slugFlexDirection, slugFlexWrap, slugSelectorAdjacent, slugSelectorAttribute,
		slugSelectorChaining, slugSelectorChild, slugSelectorClass, slugSelectorDesc, slugSelectorSibling, slugSelectorGrouping,
		slugSelectorID, slugSelectorType, slugSelectorUniversal)
}
