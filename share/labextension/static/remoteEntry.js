// xcuda-jupyterlab: %%cuda cells in JupyterLab 4 and Notebook 7, written as a prebuilt extension by hand.
//
// JupyterLab loads a prebuilt ("federated") extension as a webpack module-federation container: the
// server lists every labextensions/<name>/package.json whose jupyterlab._build names a script (`load`)
// and the module of plugins (`extension`); the page loads the script, takes window._JUPYTERLAB[<name>],
// calls its init(shareScope) with the application's shared modules, then get('./extension') for a
// factory whose module's default export is the list of plugins. This file is such a container with no
// bundler: it takes everything it uses (the notebook tracker's token, the editor language registry's,
// CodeMirror 6's state and view) from that share scope, so the tokens and CodeMirror classes are the
// application's own instances, which plugin resolution and CodeMirror's extension checks need.
//
// What it does, per code cell of every notebook (any kernel: `%load_ext xcuda` in ipykernel too):
// - a cell whose first line is %%cuda or %%cuda_header gets JupyterLab's own C++ language (the cell
//   model's mimeType becomes text/x-c++src, the registry's C++), as soon as that line is typed, and the
//   notebook's language again when it is removed; the magic line itself is marked as a magic;
// - the compile messages %%cuda publishes with an error (application/vnd.xcuda.diagnostics+json beside
//   its HTML) are marked in the cell's editor at their lines: a gutter marker, the line tinted, the
//   column underlined, the message on hover; they go when the cell is edited or its outputs change
//   without them (a clean run clears them). A message with `cell` (an In[N]) is about another cell: a
//   launch's fault at a line of a %%cuda cell is marked in that cell, until it is edited;
// - Enter after the %%cuda line does not indent the next line (C++'s indenter reads the magic as an
//   unfinished statement).
(function () {
  'use strict';

  var NAME = 'xcuda-jupyterlab';
  var CPP = 'text/x-c++src';
  var DIAGNOSTICS_MIME = 'application/vnd.xcuda.diagnostics+json';
  var MAGIC = /^(?:[ \t]*\n)*%%cuda(?:_header)?(?=\s|$)/;
  var script = document.currentScript;
  var BASE = script && script.src ? script.src.replace(/[^/]*$/, '') : '';

  var shareScope = null;

  function compareVersions(a, b) {
    var pa = a.split(/[.-]/), pb = b.split(/[.-]/);
    for (var i = 0; i < Math.max(pa.length, pb.length); i++) {
      var x = parseInt(pa[i], 10), y = parseInt(pb[i], 10);
      if (isNaN(x) || isNaN(y)) { if (pa[i] !== pb[i]) return String(pa[i]) < String(pb[i]) ? -1 : 1; continue; }
      if (x !== y) return x - y;
    }
    return 0;
  }

  // The application's instance of a shared package: the one already loaded, else the newest offered.
  function shared(name) {
    var versions = shareScope && shareScope[name];
    if (!versions || !Object.keys(versions).length) {
      return Promise.reject(new Error(NAME + ': ' + name + ' is not among the application\'s shared modules'));
    }
    var keys = Object.keys(versions).sort(compareVersions);
    var key = keys.filter(function (k) { return versions[k].loaded; }).pop() || keys.pop();
    return Promise.resolve(versions[key].get()).then(function (factory) { return factory(); });
  }

  function addStyle() {
    if (!BASE || document.querySelector('link[data-xcuda-jupyterlab]')) return;
    var link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = BASE + 'style.css';
    link.setAttribute('data-xcuda-jupyterlab', '');
    document.head.appendChild(link);
  }

  // ---- CodeMirror: the magic line and the compile messages, as decorations of the cell's editor ----
  function editorExtensions(cmState, cmView, cmLanguage) {
    var setDiagnostics = cmState.StateEffect.define();

    // Whether the only text above `start` (where the line being indented begins) is the %%cuda line:
    // C++'s indenter reads the magic as an unfinished statement and indents the next line as its
    // continuation.
    function belowMagicOnly(doc, start) {
      var seenMagic = false;
      for (var n = 1; n <= doc.lines; n++) {
        var line = doc.line(n);
        if (line.from >= start) break;
        var text = line.text.slice(0, Math.max(0, start - line.from));
        if (!text.trim()) continue;
        if (!seenMagic && /^%%cuda(?:_header)?(?=\s|$)/.test(text)) { seenMagic = true; continue; }
        return false;
      }
      return seenMagic;
    }
    // A line right under the magic line starts at column 0; any other line is the language's (undefined
    // hands it on). With Enter the new line is simulated as a break at the cursor.
    var magicIndent = cmLanguage.indentService.of(function (context, pos) {
      var simulated = context.options && context.options.simulateBreak === pos;
      var start = simulated ? pos : context.state.doc.lineAt(pos).from;
      return belowMagicOnly(context.state.doc, start) ? 0 : undefined;
    });

    // "error" and "warning" have markers; NVRTC's "catastrophic error" (a missing #include file) is an
    // error; any other severity (remark) is shown as a warning.
    function kind(severity) { return /error/.test(severity || '') ? 'error' : 'warning'; }

    function describe(list) {
      return list.map(function (d) {
        return d.severity + ': ' + d.message + (d.hint ? '\n' + d.hint : '');
      }).join('\n');
    }

    // The messages grouped by line of this document: [{line, kind, title, from, to}], in line order.
    function locate(doc, diagnostics) {
      var byLine = {};
      diagnostics.forEach(function (d) {
        if (d.file || !(d.line >= 1) || d.line > doc.lines) return;
        (byLine[d.line] = byLine[d.line] || []).push(d);
      });
      return Object.keys(byLine).map(Number).sort(function (a, b) { return a - b; }).map(function (n) {
        var list = byLine[n], line = doc.line(n);
        var worst = list.some(function (d) { return kind(d.severity) === 'error'; }) ? 'error' : kind(list[0].severity);
        // The underline: the word at the first message's column, else the line's text without its indent.
        var col = list[0].column >= 1 ? Math.min(list[0].column - 1, line.length) : -1;
        var from, to;
        if (col >= 0 && col < line.length) {
          var word = /^[A-Za-z0-9_]+/.exec(line.text.slice(col));
          from = line.from + col;
          to = from + (word ? word[0].length : 1);
        } else {
          var indent = /^\s*/.exec(line.text)[0].length;
          from = line.from + indent;
          to = line.to;
        }
        return {line: n, kind: worst, title: describe(list), from: from, to: to};
      });
    }

    // GutterMarker is an ES class: its subclass must be one too.
    class Marker extends cmView.GutterMarker {
      constructor(kind, title) { super(); this.kind = kind; this.title = title; }
      eq(other) { return other.kind === this.kind && other.title === this.title; }
      toDOM() {
        var el = document.createElement('span');
        el.className = 'xcuda-gutter-marker xcuda-' + this.kind;
        el.title = this.title;
        el.textContent = this.kind === 'error' ? '\u25cf' : '\u25b2';
        return el;
      }
    }

    function build(doc, diagnostics) {
      var lines = [], marks = [], gutter = [];
      locate(doc, diagnostics).forEach(function (m) {
        var at = doc.line(m.line).from;
        var attributes = {title: m.title, 'data-xcuda-severity': m.kind};
        lines.push(cmView.Decoration.line({class: 'xcuda-diagnostic-line xcuda-' + m.kind, attributes: attributes})
                   .range(at));
        if (m.to > m.from) {
          marks.push(cmView.Decoration.mark({class: 'xcuda-diagnostic-mark xcuda-' + m.kind, attributes: attributes})
                     .range(m.from, m.to));
        }
        gutter.push(new Marker(m.kind, m.title).range(at));
      });
      return {
        decorations: cmView.Decoration.set(lines.concat(marks), true),
        gutter: cmState.RangeSet.of(gutter, true),
        count: diagnostics.length
      };
    }

    var empty = {decorations: cmView.Decoration.none, gutter: cmState.RangeSet.empty, count: 0};
    var diagnosticsField = cmState.StateField.define({
      create: function () { return empty; },
      update: function (value, tr) {
        for (var i = 0; i < tr.effects.length; i++) {
          if (tr.effects[i].is(setDiagnostics)) {
            return tr.effects[i].value.length ? build(tr.state.doc, tr.effects[i].value) : empty;
          }
        }
        return tr.docChanged ? empty : value;  // an edit makes the messages stale: they go
      },
      provide: function (field) {
        return cmView.EditorView.decorations.from(field, function (v) { return v.decorations; });
      }
    });
    var diagnosticsGutter = cmView.gutter({
      class: 'xcuda-diagnostics-gutter',
      markers: function (view) { return view.state.field(diagnosticsField).gutter; }
    });

    // The %%cuda line: the magic's name marked as a magic, its options as plain text (not C++).
    function magicDecorations(doc) {
      for (var n = 1; n <= doc.lines; n++) {
        var line = doc.line(n);
        if (!line.text.trim()) continue;
        var m = /^%%cuda(?:_header)?(?=\s|$)/.exec(line.text);
        if (!m) return cmView.Decoration.none;
        var ranges = [cmView.Decoration.line({class: 'xcuda-magic-line'}).range(line.from),
                      cmView.Decoration.mark({class: 'xcuda-magic'}).range(line.from, line.from + m[0].length)];
        if (line.length > m[0].length) {
          ranges.push(cmView.Decoration.mark({class: 'xcuda-magic-options'})
                      .range(line.from + m[0].length, line.to));
        }
        return cmView.Decoration.set(ranges, true);
      }
      return cmView.Decoration.none;
    }
    var magicField = cmState.StateField.define({
      create: function (state) { return magicDecorations(state.doc); },
      update: function (value, tr) { return tr.docChanged ? magicDecorations(tr.state.doc) : value; },
      provide: function (field) { return cmView.EditorView.decorations.from(field); }
    });

    return {
      extension: [magicIndent, magicField, diagnosticsField, diagnosticsGutter],
      setDiagnostics: setDiagnostics,
      count: function (view) { return view.state.field(diagnosticsField, false) ? view.state.field(diagnosticsField).count : 0; }
    };
  }

  // ---- The notebook: which cells are CUDA, and the messages in their outputs ----
  // All the messages in a cell's outputs: its own compile's, and those about other cells (a fault a
  // launch met names the %%cuda cell's In[N] as `cell`).
  function diagnosticsIn(outputs) {
    var found = [];
    for (var i = 0; i < outputs.length; i++) {
      var data = outputs.get(i).data || {};
      var payload = data[DIAGNOSTICS_MIME];
      if (payload && Array.isArray(payload.diagnostics)) found = found.concat(payload.diagnostics);
    }
    return found;
  }
  function isAboutAnotherCell(d) { return typeof d.cell === 'number' && d.cell > 0; }

  function watchNotebook(panel, languages, cm) {
    var notebook = panel.content;
    var ours = new WeakSet();      // cell models whose mimeType this extension set
    var injected = new WeakSet();  // editors that have the extensions
    var canHighlight = !!languages.findByMIME(CPP);
    if (!canHighlight) console.warn(NAME + ': the editor language registry has no ' + CPP);

    function notebookMime() { return notebook.codeMimetype || 'text/x-ipython'; }

    function widgetOf(model) {
      var widgets = notebook.widgets;
      for (var i = 0; i < widgets.length; i++) if (widgets[i].model === model) return widgets[i];
      return null;
    }

    // Runs fn(EditorView) once the cell's editor exists (with windowing it may be made later).
    function withEditor(model, fn) {
      var widget = widgetOf(model);
      if (!widget) return;
      Promise.resolve(widget.ready).then(function () {
        var editor = widget.editor;
        if (widget.isDisposed || !editor || !editor.editor) return;
        if (!injected.has(editor)) {
          injected.add(editor);
          editor.injectExtension(cm.extension);
        }
        fn(editor.editor);
      });
    }

    function isCuda(model) { return MAGIC.test(model.sharedModel.getSource()); }

    function applyLanguage(model) {
      if (model.isDisposed) return;
      if (isCuda(model)) {
        if (model.mimeType !== CPP) { ours.add(model); model.mimeType = CPP; }
      } else if (ours.has(model)) {
        ours.delete(model);
        if (model.mimeType === CPP) model.mimeType = notebookMime();
      }
    }

    // The editor follows a mimeType change asynchronously (it loads the language, then reconfigures), so
    // of two changes in a row the language loaded last wins, not the mimeType set last. The change is made
    // once the language the cell has now and C++ are both loaded, and after the editor's own handlers ran.
    function updateLanguage(model) {
      if (!canHighlight) return;
      var loaded = [languages.getLanguage(model.mimeType), languages.getLanguage(CPP)];
      Promise.all(loaded).catch(function () {}).then(function () {
        setTimeout(function () { applyLanguage(model); }, 0);
      });
    }

    // Marks one cell's outputs put on other cells (by In[N]): target model -> Map(source model -> list).
    // They go when the target is edited, or the source's outputs change without them.
    var foreign = new Map();
    var sent = new Map();  // source model -> the target models it marked

    function modelWithCount(count) {
      var cells = notebook.model && notebook.model.cells;
      if (!cells) return null;
      for (var i = 0; i < cells.length; i++) {
        var cell = cells.get(i);
        if (cell.type === 'code' && cell.executionCount === count) return cell;
      }
      return null;
    }

    function showDiagnostics(model) {
      var diagnostics = diagnosticsIn(model.outputs).filter(function (d) { return !isAboutAnotherCell(d); });
      (foreign.get(model) || new Map()).forEach(function (list) { diagnostics = diagnostics.concat(list); });
      withEditor(model, function (view) {
        if (!diagnostics.length && !cm.count(view)) return;
        view.dispatch({effects: cm.setDiagnostics.of(diagnostics)});
      });
    }

    function updateDiagnostics(model) {
      var affected = new Set([model]);
      (sent.get(model) || new Set()).forEach(function (target) {
        if (foreign.has(target)) foreign.get(target).delete(model);
        affected.add(target);
      });
      var targets = new Set();
      var byCell = {};
      diagnosticsIn(model.outputs).filter(isAboutAnotherCell).forEach(function (d) {
        (byCell[d.cell] = byCell[d.cell] || []).push(d);
      });
      Object.keys(byCell).forEach(function (count) {
        var target = modelWithCount(Number(count));
        if (!target) return;
        if (!foreign.has(target)) foreign.set(target, new Map());
        foreign.get(target).set(model, byCell[count]);
        targets.add(target);
        affected.add(target);
      });
      sent.set(model, targets);
      affected.forEach(showDiagnostics);
    }

    // An edit makes the cell's marks stale (the editor drops them): those from other cells go too.
    function dropForeign(model) {
      if (foreign.has(model)) foreign.get(model).clear();
    }

    function attach(model) {
      if (!model || model.type !== 'code' || model.__xcudaWatched) return;
      model.__xcudaWatched = true;
      updateLanguage(model);
      model.sharedModel.changed.connect(function (_, change) {
        if (change.sourceChange) { updateLanguage(model); dropForeign(model); }
      });
      // The notebook sets every code cell's mimeType when the kernel's language arrives: a %%cuda cell
      // stays C++.
      model.mimeTypeChanged.connect(function () {
        if (model.mimeType !== CPP && isCuda(model)) updateLanguage(model);
      });
      model.outputs.changed.connect(function () { updateDiagnostics(model); });
      withEditor(model, function () {});
      updateDiagnostics(model);
    }

    function attachAll() {
      var cells = notebook.model && notebook.model.cells;
      if (!cells) return;
      for (var i = 0; i < cells.length; i++) attach(cells.get(i));
    }

    function watchModel() {
      var model = notebook.model;
      if (!model) return;
      attachAll();
      model.cells.changed.connect(function (_, args) {
        // The notebook makes the new cells' widgets in its own handler of this signal: after it, attach.
        setTimeout(function () { (args.newValues || []).forEach(attach); attachAll(); }, 0);
      });
    }

    watchModel();
    notebook.modelChanged.connect(watchModel);
    Promise.resolve(panel.context && panel.context.ready).then(attachAll);
  }

  function load() {
    addStyle();
    return Promise.all([shared('@jupyterlab/notebook'), shared('@jupyterlab/codemirror'),
                        shared('@codemirror/state'), shared('@codemirror/view'), shared('@codemirror/language'),
                        shared('@lezer/highlight')]).then(function (m) {
      var notebookModule = m[0], codemirrorModule = m[1], cmLanguage = m[4], lezerHighlight = m[5];
      var cm = editorExtensions(m[2], m[3], cmLanguage);
      var plugin = {
        id: NAME + ':cuda-cells',
        description: 'Highlights %%cuda cells as C++ and marks their compile messages in the editor.',
        autoStart: true,
        requires: [notebookModule.INotebookTracker, codemirrorModule.IEditorLanguageRegistry],
        activate: function (app, tracker, languages) {
          // JupyterLab's highlight style leaves type names plain; in C++ (only: the style is scoped to the
          // registry's C++ language) they get the theme's variable-2 colour, so `float* x` reads as a type.
          var typeStyle = Promise.resolve(languages.findByMIME(CPP) && languages.getLanguage(CPP)).then(function (cpp) {
            var language = cpp && cpp.support && cpp.support.language;
            if (!language) return;
            cm.extension.push(cmLanguage.syntaxHighlighting(cmLanguage.HighlightStyle.define(
              [{tag: lezerHighlight.tags.typeName, color: 'var(--jp-mirror-editor-variable-2-color)'}],
              {scope: language})));
          }).catch(function (error) { console.warn(NAME + ': no C++ type colour', error); });
          typeStyle.then(function () {
            tracker.forEach(function (panel) { watchNotebook(panel, languages, cm); });
            tracker.widgetAdded.connect(function (_, panel) { watchNotebook(panel, languages, cm); });
          });
        }
      };
      return {__esModule: true, default: [plugin]};
    });
  }

  var modulePromise = null;
  var container = {
    init: function (scope) {
      if (!shareScope) shareScope = scope;
      return Promise.resolve();
    },
    get: function (module) {
      if (module !== './extension') {
        return Promise.reject(new Error(NAME + ' has no module ' + module));
      }
      modulePromise = modulePromise || load();
      return modulePromise.then(function (exports) { return function () { return exports; }; });
    }
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB[NAME] = container;
})();
