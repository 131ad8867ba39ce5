//! Array dataflow analysis (Feautrier's method): for every value a statement reads, the
//! statement instance that last wrote that element before the read, or the array's
//! initial contents where no instance did. isl computes the last writer exactly as a
//! parametric lexicographic maximum in the common time space of the `2d+1` schedules.
//! This turns the program into the paper's system of affine recurrence equations: each
//! read becomes a piecewise affine reference to another statement or to an input.

use super::model::{reads, Model};
use super::{isl_error, AffineError};
use crate::polyhedral::isl::{Isl, UnionMap, UnionSet};

/// Where a read value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// An instance of statement `n` (an index into [`Model::statements`]).
    Statement(usize),
    /// The initial contents of the array read.
    Input,
}

/// One source of a read: the relation from the source's space (a statement's, or the
/// array's own for [`Source::Input`]) to the reading statement's iterations.
#[derive(Clone, Debug)]
pub struct Flow {
    pub source: Source,
    pub relation: UnionMap,
}

/// The sources of every read, and of every element's final value.
#[derive(Clone, Debug)]
pub struct Dataflow {
    /// Per statement, per read in the order [`reads`] lists them.
    pub reads: Vec<Vec<Vec<Flow>>>,
    /// Per statement, what the element it writes held just before: the previous writer
    /// of that element, or the array's initial contents.
    pub overwrites: Vec<Vec<Flow>>,
    /// Per array that some statement writes: the flows into its final contents, from
    /// statement spaces (or the array's initial contents) to the array's cells.
    pub final_values: Vec<(String, Vec<Flow>)>,
}

/// The internal name of read `r` of statement `s`, or of the final read of an array.
fn tag(model: &Model, s: usize, r: usize) -> String {
    format!("{}__read{r}", model.statements[s].name)
}

fn overwrite_tag(model: &Model, s: usize) -> String {
    format!("{}__overwrite", model.statements[s].name)
}

fn final_tag(array: &str) -> String {
    format!("{array}__final")
}

/// Run the analysis.
pub fn analyse(isl: &Isl, model: &Model) -> Result<Dataflow, AffineError> {
    let err = isl_error("array dataflow analysis");
    let prefix = model.params_prefix();
    let union_map = |pieces: &[String]| -> Result<UnionMap, AffineError> {
        if pieces.is_empty() {
            return Ok(isl.empty_union_map());
        }
        isl.union_map(&format!("{prefix}{{ {} }}", pieces.join("; ")))
            .map_err(&err)
    };
    let mut write_pieces = Vec::new();
    let mut read_pieces = Vec::new();
    let mut reader_schedule = Vec::new();
    for (s, st) in model.statements.iter().enumerate() {
        write_pieces.push(model.access_piece(s, &st.target, None));
        let mut accesses = Vec::new();
        reads(&st.value, &mut accesses);
        for (r, access) in accesses.iter().enumerate() {
            let t = tag(model, s, r);
            read_pieces.push(model.access_piece(s, access, Some(&t)));
            reader_schedule.push(model.schedule_piece(s, Some(&t)));
        }
        // What the write replaces, as if the statement read its target first.
        let t = overwrite_tag(model, s);
        read_pieces.push(model.access_piece(s, &st.target, Some(&t)));
        reader_schedule.push(model.schedule_piece(s, Some(&t)));
    }
    // The final contents are read after the whole program, at a time past every
    // statement's first schedule component.
    let written: Vec<&str> = {
        let mut names: Vec<&str> = model
            .statements
            .iter()
            .map(|s| s.target.array.as_str())
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let last_position = model
        .statements
        .iter()
        .map(|s| s.schedule[0].constant)
        .max()
        .unwrap_or(0);
    for array in &written {
        let decl = model.program.array(array).expect("declared");
        let (cells, condition) = model.cells(decl);
        let vars = &cells[array.len()..];
        let t = final_tag(array);
        read_pieces.push(format!("{t}{vars} -> {cells} : {condition}"));
        let mut times = vec![(last_position + 1).to_string()];
        times.resize(model.schedule_len, "0".into());
        reader_schedule.push(format!("{t}{vars} -> [{}]", times.join(", ")));
    }
    let writes = union_map(&write_pieces)?;
    let all_reads = union_map(&read_pieces)?;
    let writer_schedule = isl.union_map(&model.schedule_text()).map_err(&err)?;
    let reader_schedule = union_map(&reader_schedule)?;

    let same_cell = all_reads
        .then(&writes.reverse().map_err(&err)?)
        .map_err(&err)?;
    let before = reader_schedule.lex_gt(&writer_schedule).map_err(&err)?;
    let last_writer = same_cell
        .intersect(&before)
        .and_then(|m| m.then(&writer_schedule))
        .and_then(|m| m.lexmax())
        .and_then(|m| m.then(&writer_schedule.reverse()?))
        .and_then(|m| m.coalesce())
        .map_err(&err)?;
    let unwritten = all_reads
        .domain()
        .and_then(|d| d.subtract(&last_writer.domain()?))
        .map_err(&err)?;
    let initial = all_reads.restrict_domain(&unwritten).map_err(&err)?;

    // Split the flows into each read, turned around to point from source to reader.
    let flows_into =
        |reader_tag: &str, reader_tuple: &str, array: &str| -> Result<Vec<Flow>, AffineError> {
            let vars = reader_tuple
                .split_once('[')
                .map(|(_, v)| v.trim_end_matches(']'))
                .unwrap_or("");
            let reader_space = isl
                .union_set(&format!("{prefix}{{ {reader_tag}[{vars}] }}"))
                .map_err(&err)?;
            let rename = isl
                .union_map(&format!("{{ {reader_tag}[{vars}] -> {reader_tuple} }}"))
                .map_err(&err)?;
            let into = |m: &UnionMap| -> Result<UnionMap, String> {
                m.restrict_domain(&reader_space)?.reverse()?.then(&rename)
            };
            let from_writers = into(&last_writer).map_err(&err)?;
            let mut out = Vec::new();
            for (w, st) in model.statements.iter().enumerate() {
                if st.target.array != array {
                    continue;
                }
                let space = isl
                    .union_set(&format!("{prefix}{{ {} }}", model.tuple(w)))
                    .map_err(&err)?;
                let relation = from_writers.restrict_domain(&space).map_err(&err)?;
                if !relation.is_empty().map_err(&err)? {
                    out.push(Flow {
                        source: Source::Statement(w),
                        relation,
                    });
                }
            }
            let relation = into(&initial).map_err(&err)?;
            if !relation.is_empty().map_err(&err)? {
                out.push(Flow {
                    source: Source::Input,
                    relation,
                });
            }
            Ok(out)
        };

    let mut per_statement = Vec::new();
    let mut overwrites = Vec::new();
    for (s, st) in model.statements.iter().enumerate() {
        overwrites.push(flows_into(
            &overwrite_tag(model, s),
            &model.tuple(s),
            &st.target.array,
        )?);
        let mut accesses = Vec::new();
        reads(&st.value, &mut accesses);
        let tuple = model.tuple(s);
        let mut flows = Vec::new();
        for (r, access) in accesses.iter().enumerate() {
            flows.push(flows_into(&tag(model, s, r), &tuple, &access.array)?);
        }
        per_statement.push(flows);
    }
    let mut final_values = Vec::new();
    for array in written {
        let decl = model.program.array(array).expect("declared");
        let (tuple, _) = model.cells(decl);
        final_values.push((
            array.to_string(),
            flows_into(&final_tag(array), &tuple, array)?,
        ));
    }
    Ok(Dataflow {
        reads: per_statement,
        overwrites,
        final_values,
    })
}

/// The union of the sources' images of `known` sets through the flows: the cells or
/// iterations a flow reaches from the given non-zero sets (`None` for a source whose set
/// is not known).
pub fn image(
    isl: &Isl,
    flows: &[Flow],
    set_of: &dyn Fn(Source) -> Option<UnionSet>,
) -> Result<UnionSet, String> {
    let mut out = isl.empty_union_set();
    for flow in flows {
        if let Some(set) = set_of(flow.source) {
            out = out.union(&set.apply(&flow.relation)?)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affine::parse::parse_program;

    #[test]
    fn matrix_multiply_reads_its_own_partial_sums() {
        let src = "int N; double A[N][N], B[N][N], C[N][N];
            for (i = 0; i < N; i++) for (j = 0; j < N; j++) {
              C[i][j] = 0;
              for (k = 0; k < N; k++) C[i][j] += A[i][k] * B[k][j];
            }";
        let model = Model::new(parse_program(src).unwrap()).unwrap();
        let isl = Isl::new();
        let flow = analyse(&isl, &model).unwrap();
        // S2 reads C (from S1 at k = 0, from S2 at k - 1), then A and B (inputs).
        let c = &flow.reads[1][0];
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].source, Source::Statement(0));
        assert_eq!(c[1].source, Source::Statement(1));
        let expected = isl
            .union_map(
                "[N] -> { S2[i, j, k] -> S2[i, j, k + 1] : 0 <= i, j < N and 0 <= k < N - 1 }",
            )
            .unwrap();
        assert!(c[1]
            .relation
            .subtract(&expected)
            .unwrap()
            .is_empty()
            .unwrap());
        assert!(expected
            .subtract(&c[1].relation)
            .unwrap()
            .is_empty()
            .unwrap());
        assert_eq!(flow.reads[1][1][0].source, Source::Input);
        assert_eq!(flow.reads[1][2][0].source, Source::Input);
        // C's final contents come from S2 at k = N - 1 (and from S1 when N = 0 has no k).
        let (name, finals) = &flow.final_values[0];
        assert_eq!(name, "C");
        assert!(finals.iter().any(|f| f.source == Source::Statement(1)));
    }
}
