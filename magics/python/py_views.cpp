// The teaching views: PTX and SASS as highlighted HTML (str subclasses, so the raw text is the object
// itself), the source-to-PTX/SASS line map, and side-by-side comparisons of two compiles. The views are
// the core's (frontend/kernel_views); here they become Python objects, the disassembly without the GIL.

#include "py_common.hpp"

#include "code_view.hpp"
#include "kernel_views.hpp"

namespace xcuda::python
{
    namespace
    {
        py::object g_ptx_class;
        py::object g_sass_class;

        // The disassembly's wait, without the GIL.
        void without_gil(const std::function<void()>& work)
        {
            py::gil_scoped_release release;
            work();
        }

        // class NAME(str) with _repr_html_ (highlighted) and _repr_pretty_ (the raw text, unquoted).
        py::object make_text_class(py::module_& m, const char* name, std::string (*highlight)(const std::string&),
                                   const char* doc)
        {
            py::module_ builtins = py::module_::import("builtins");
            py::dict body;
            body["__doc__"] = doc;
            body["__module__"] = "xcuda";
            py::object cls = builtins.attr("type")(name, py::make_tuple(builtins.attr("str")), body);
            cls.attr("_repr_html_") =
                py::cpp_function([highlight](py::object self) { return highlight(str_of(self)); }, py::is_method(cls));
            cls.attr("_repr_pretty_") = py::cpp_function(
                [](py::object self, py::object printer, bool) { printer.attr("text")(py::str(self)); },
                py::is_method(cls));
            m.attr(name) = cls;
            return cls;
        }
    }

    py::object ptx_text(const std::string& text) { return g_ptx_class(text); }

    py::object kernel_ptx(cuda_kernel& kernel) { return g_ptx_class(kernel_views::kernel_ptx(kernel)); }

    py::object kernel_sass(cuda_kernel& kernel)
    {
        return g_sass_class(kernel_views::join(kernel_views::kernel_listing(kernel, true, &without_gil)));
    }

    py::object module_sass_text(cuda_module& module) { return g_sass_class(kernel_views::module_sass(module, &without_gil)); }

    py::object kernel_lines(cuda_kernel& kernel, bool sass, const std::map<int, std::pair<std::string, double>>& notes)
    {
        return py::cast(kernel_views::lines(kernel, sass, notes, &without_gil));
    }

    py::object compare_kernels(cuda_kernel& left, cuda_kernel& right, bool sass)
    {
        return py::cast(kernel_views::compare(left, right, sass, &without_gil));
    }

    void register_views(py::module_& m)
    {
        g_ptx_class = make_text_class(m, "PTX", &code_view::highlight_ptx_html,
                                      "PTX text (a str); shown as syntax-highlighted HTML in notebooks.");
        g_sass_class = make_text_class(m, "SASS", &code_view::highlight_sass_html,
                                       "SASS text (a str); shown as syntax-highlighted HTML in notebooks.");
        py::class_<text_view>(m, "View", "A rendered view: HTML in notebooks, text elsewhere.")
            .def_readonly("html", &text_view::html)
            .def_readonly("text", &text_view::text)
            .def("_repr_html_", [](const text_view& v) { return v.html; })
            .def("__repr__", [](const text_view& v) { return v.text; });
    }
}
