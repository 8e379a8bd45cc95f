// Highlights `%%cuda` cells as CUDA C++ in the classic Jupyter Notebook (6.x), which loads a
// kernelspec's kernel.js through requirejs when a notebook opens with this kernel. JupyterLab and
// Notebook 7 do not load kernel.js; there `%%cuda` cells keep the kernel's Python highlighting.
//
// Notebook 6 picks a cell's CodeMirror mode from the regular expressions in
// CodeCell.options_default.highlight_modes, matched against the cell's first line; a key
// 'magic_<mode>' draws the magic line itself as `cm-magic` and the rest of the cell in <mode>.
// CodeMirror's clike mode for C++ (text/x-c++src) knows C++'s keywords and types; CUDA's own
// qualifiers (__global__, __shared__) are reserved identifiers there and drawn as such.
define([
    'base/js/namespace',
    'notebook/js/codecell',
    'codemirror/mode/clike/clike'  // loaded ahead, so that %%cuda cells need not wait for it
], function (Jupyter, codecell) {
    'use strict';

    var CUDA_MODE = 'magic_text/x-c++src';

    function highlight_code_cells(notebook) {
        notebook.get_cells().forEach(function (cell) {
            if (cell.cell_type === 'code') {
                cell.auto_highlight();
            }
        });
    }

    // The notebook's CodeMirror theme (ipython) has no colour for C++ types (`cm-type`: void,
    // float, size_t); give them the colour it gives Python's builtins (float, int).
    function add_type_style() {
        if (document.getElementById('xcuda-codemirror-style')) {
            return;
        }
        var style = document.createElement('style');
        style.id = 'xcuda-codemirror-style';
        style.textContent = '.cm-s-ipython span.cm-type { color: #008000; }';
        document.head.appendChild(style);
    }

    function onload() {
        add_type_style();
        codecell.CodeCell.options_default.highlight_modes[CUDA_MODE] = {reg: ['^%%cuda\\b']};
        var notebook = Jupyter.notebook;
        if (!notebook) {
            return;
        }
        // When the kernel reports its language, the notebook sets every code cell to the kernel's
        // mode (ipython), which undoes the per-cell magic modes until a cell is next selected or
        // edited. Re-detect each cell's mode after that dispatch, whenever it happens. The notebook
        // object is sealed, so the wrapper goes on its prototype (once per page).
        var proto = Object.getPrototypeOf(notebook);
        if (!proto._dispatch_mode.xcuda) {
            var dispatch_mode = proto._dispatch_mode;
            proto._dispatch_mode = function () {
                var result = dispatch_mode.apply(this, arguments);
                highlight_code_cells(this);
                return result;
            };
            proto._dispatch_mode.xcuda = true;
        }
        highlight_code_cells(notebook);
    }

    return {onload: onload};
});
