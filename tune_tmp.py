import numpy as np, sys, itertools
from privacy.federated.experiments import ExperimentConfig, build_trial, Evaluator
from privacy.federated import run_sync
from privacy.federated.models import LeastSquaresModel
import privacy.federated.experiments as E
ds = sys.argv[1]; rounds=int(sys.argv[2])
part = sys.argv[3] if len(sys.argv)>3 else "iid"
for basis, B, ridge in itertools.product([0, 4], [1.5, 2.5, 4.0], [0.01, 0.05]):
    accs=[];accs_g=[]; cent=[]
    for t in range(3):
        cfg=ExperimentConfig(ds, partition=part, rounds=rounds, basis=basis, ridge=ridge)
        tr=build_trial(cfg, t, ("fedavg",))
        m=tr.model
        model=LeastSquaresModel(m.features, m.num_classes, feature_bound=B, total_samples=m.total_samples, ridge=ridge)
        fi=E.build_algorithm("fedinfer", cfg, tr.data, model)
        ev=Evaluator(model, tr.data.X_test, tr.data.y_test)
        r=run_sync(fi, tr.data.clients, rounds=rounds, seed=t, evaluate=ev)
        accs.append(r.metric("accuracy")[-1])
        fa=E.build_algorithm("fedavg", cfg, tr.data, model)
        r=run_sync(fa, tr.data.clients, rounds=rounds, seed=t, evaluate=ev)
        accs_g.append(r.metric("accuracy")[-1])
        X,y=tr.data.pooled(); cent.append(ev.accuracy(model.centralized(X,y)))
    print(basis, B, ridge, "fedinfer", np.mean(accs).round(3), "fedavg", np.mean(accs_g).round(3), "central", np.mean(cent).round(3), flush=True)
